/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Every timing rule of the gossip engine, in one place (proto/gossip.md §9).
 * The engine (src/gossip/engine) reads them; the I/O layer only arms the one
 * timer the engine asks for, and the simulator in src/gossip/tests drives the same
 * engine, so each rule here is exercised by the randomized safety test.
 * The full-digest and delta periods are settings (gossipIntervalMs,
 * gossipDeltaMs), passed in nsrv_gossip_node_opts_t.
 */
#pragma once

/* SYNC_REQ is repeated this often until every peer's first digest arrived. */
#define NSRV_GOSSIP_SYNC_RETRY_MS 500
/* A peer gets at most one full digest per this long in answer to SYNC_REQs. */
#define NSRV_GOSSIP_SYNC_REPLY_MIN_MS 1000
/* Jitter of the full-digest period, in percent either way. */
#define NSRV_GOSSIP_FULL_JITTER_PCT 10
/* The first full digest after start goes out after a fifth of the period. */
#define NSRV_GOSSIP_FIRST_FULL_DIV 5

/*
 * A new or changed observation goes out in the delta of its tick and again
 * in the next this-many delta ticks (the same observation: the age is that
 * of the real last heartbeat), so one lost datagram does not leave a peer
 * waiting for the next full digest: at 30 % loss all 1 + 5 copies are lost
 * with probability 0.3^6 = 0.07 %. Tombstones are repeated the same way.
 */
#define NSRV_GOSSIP_DELTA_REPEATS 5

/*
 * After those copies, the entry still goes out in every delta tick to each
 * peer that has not shown it holds the broker (it pulled it from us, or its
 * own digest reports that data version), for this long after the change.
 * Six lost copies are rare for one peer (0.07 % at 30 % loss) but not for a
 * cluster: two peers and a run of lost datagrams that spans the six ticks of
 * several brokers made about one broker in 300 wait for a full digest that
 * got through (2-12 s). Confirmed peers cost nothing more, so the common
 * case stays at 1 + NSRV_GOSSIP_DELTA_REPEATS copies.
 */
#define NSRV_GOSSIP_NEWS_UNTIL_CONFIRMED_MS 2000

/* Keys that a digest made us want are batched this long before a pull. */
#define NSRV_GOSSIP_PULL_BATCH_MS 100
/* A pull (either side) that takes longer is abandoned (memberlist TCPTimeout). */
#define NSRV_GOSSIP_PULL_DEADLINE_MS 10000
/* The pull server closes a connection that has not sent a complete request
 * this long after it was accepted (a reply being written gets the full
 * NSRV_GOSSIP_PULL_DEADLINE_MS), and holds at most this many connections: a
 * new one beyond it evicts the oldest that has not sent its request yet. */
#define NSRV_GOSSIP_PULL_REQ_DEADLINE_MS 2000
#define NSRV_GOSSIP_PULL_SRV_MAX 64

/* After a failed pull, a peer is not asked again for this long. */
#define NSRV_GOSSIP_PULL_RETRY_MS 1000
/* Keys per pull request. */
#define NSRV_GOSSIP_PULL_KEYS_MAX 4096
/* Keys waiting to be pulled from one peer; a peer cannot make us hold more. */
#define NSRV_GOSSIP_PEND_MAX 65536
/* A pulled registration this node refused (over its own registration limits)
 * is not pulled again from that peer, at the same or an older data version, for
 * this long (proto/gossip.md §7.5): the peer keeps offering it in its digests. */
#define NSRV_GOSSIP_UNUSABLE_RETRY_MS 60000

/*
 * A peer's clock anchor (a signed pull reply) is refreshed this often, so
 * the drift allowance added to it stays a few milliseconds (proto/gossip.md
 * proto/gossip.md §7.6); a younger but looser anchor replaces one older than this.
 */
#define NSRV_GOSSIP_ANCHOR_REFRESH_MS 60000

/* A refused datagram or pull request is logged at once, then at most this
 * often per sender; and keeps /health "degraded" this long (node_refusal.c). */
#define NSRV_GOSSIP_REFUSAL_LOG_MS 10000
#define NSRV_GOSSIP_REFUSAL_HEALTH_MS 60000

/* Explicit unregisters are re-sent with every full digest for this long: the
 * broker timeout plus two digest rounds. */
#define NSRV_GOSSIP_TOMB_KEEP_MS (150 * 1000)
/* Identities no longer in the route table are forgotten after this long. */
#define NSRV_GOSSIP_IDENT_KEEP_MS (10 * 60 * 1000)

/*
 * Peers configured by host name (gossipPeers "id@name:port") are looked up
 * when the engine says (node_resolve.c), by the I/O layer off the loop
 * (resolve.c): at start and on SIGHUP,
 * then every NSRV_GOSSIP_RESOLVE_MS; every NSRV_GOSSIP_RESOLVE_SILENT_MS while
 * the peer has been silent for NSRV_GOSSIP_RESOLVE_SILENT_INTERVALS gossip
 * intervals, has never been heard, or does not resolve; and at once (at most
 * every NSRV_GOSSIP_RESOLVE_KICK_MS) when a datagram or pull connection was
 * refused for its source address: a peer that came back on a new address
 * (a restarted container) is believed as soon as its name says so.
 */
#define NSRV_GOSSIP_RESOLVE_MS 5000
#define NSRV_GOSSIP_RESOLVE_SILENT_MS 1000
#define NSRV_GOSSIP_RESOLVE_SILENT_INTERVALS 2
#define NSRV_GOSSIP_RESOLVE_KICK_MS 200
/* How often the engine looks at the rules above (its poll). */
#define NSRV_GOSSIP_RESOLVE_TICK_MS 250
/* Lookups in flight at once: they run on libuv's thread pool (4 threads), which also decodes
 * big frames and registrations (src/server/conn_offload.c); a resolver that hangs for its
 * timeout on every name must not take the pool from them. The other names wait their turn. */
#define NSRV_GOSSIP_RESOLVE_MAX_INFLIGHT 2
/* At start the engine waits for its peers' names this long at most. */
#define NSRV_GOSSIP_RESOLVE_START_MS 1000

/* ANNOUNCE (proto/gossip.md §5.7): a peer that has not announced itself (perhaps an older
 * version, which refuses the type) gets this many in all (again after it restarts having
 * announced itself); one that has, gets one with every full digest. Three tries lose all to 30 %
 * loss with probability 2.7 %, and the other side's announcements, once one arrives, restore the
 * regular ones. */
#define NSRV_GOSSIP_ANNOUNCE_TRIES 3
/* LEAVE (proto/gossip.md §5.8) is sent this many times to each peer: each copy has its own seq. */
#define NSRV_GOSSIP_LEAVE_COPIES 2
