/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Gossip wire format, version 1 (proto/gossip.md). Pure: no I/O, no clocks
 * read here (callers pass them in), no libuv.
 *
 * Glossary
 *   datagram   msgpack envelope ‖ 64-byte Ed25519 signature over the envelope
 *   envelope   [ver, type, cluster, src, src_inc, seq, src_mono_ms, wall_ms,
 *               dst, key_id, body]
 *   bkey       64-bit broker key: BLAKE2b-256 of the broker identity, first
 *              8 bytes read big-endian (nsrv_gossip_bkey)
 *   entry      one direct observation: [bkey, dv_counter, dv_ts, dv_state,
 *              age_ms, flags]
 *   part       one self-contained datagram of a full digest, covering the
 *              key range [key_lo, key_hi]
 *   pull       TCP exchange: a signed PULL_REQ envelope, answered by
 *              length-prefixed broker frames and a signed end frame that
 *              also carries the responder's clock (a round-trip anchor)
 *
 * Strings decoded from the wire are (ptr, len) views into the input bytes
 * and are not NUL-terminated; arrays are allocated in the caller's arena.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "nsrv/arena.h"
#include "nsrv/buf.h"
#include "nsrv/common.h"
#include "nsrv/route_types.h"
#include "nsrv/seal.h"

#define NSRV_GOSSIP_VERSION 1
#define NSRV_GOSSIP_CLUSTER_MAX 64 /* bytes of the cluster name */
#define NSRV_GOSSIP_NODE_MIN 1
#define NSRV_GOSSIP_NODE_MAX 254
#define NSRV_GOSSIP_DST_ANY 255
#define NSRV_GOSSIP_SIG_LEN 64
#define NSRV_GOSSIP_NONCE_LEN 16
#define NSRV_GOSSIP_MAX_KEYS 4 /* public keys per peer (rotation needs 2) */

/* Datagram budget: the largest datagram a node sends (and accepts). */
#define NSRV_GOSSIP_DGRAM_DEFAULT 1200
#define NSRV_GOSSIP_DGRAM_MIN 512
#define NSRV_GOSSIP_DGRAM_MAX 65000

/* A signed PULL_REQ on TCP: at most this many bytes, at most this many keys. */
#define NSRV_GOSSIP_PULL_REQ_MAX (1u << 20)
#define NSRV_GOSSIP_PULL_MAX_KEYS 65536u

/* Pull response limits (proto/gossip.md §7). */
#define NSRV_GOSSIP_PULL_FRAME_MAX (16u << 20)
#define NSRV_GOSSIP_PULL_TOTAL_MAX (64u << 20)
#define NSRV_GOSSIP_PULL_MAX_FRAMES 65536u
#define NSRV_GOSSIP_PULL_STR_MAX 1024u /* each identity string */

/* Full-digest parts per round (part and nparts are u16 on the wire). */
#define NSRV_GOSSIP_MAX_PARTS 65535u

/* src_mono_ms, wall_ms and src_inc above this are malformed (keeps all
 * time arithmetic far from overflow; 2^62 ms is 146 million years). */
#define NSRV_GOSSIP_TIME_MAX (UINT64_C(1) << 62)

typedef enum {
    NSRV_GOSSIP_DIGEST_FULL = 1,
    NSRV_GOSSIP_DIGEST_DELTA = 2,
    NSRV_GOSSIP_SYNC_REQ = 3,
    NSRV_GOSSIP_TOMBSTONE = 4,
    NSRV_GOSSIP_PULL_REQ = 5, /* TCP only */
    NSRV_GOSSIP_ANNOUNCE = 6, /* where the sender serves (proto/gossip.md §5.7) */
    NSRV_GOSSIP_LEAVE = 7,    /* the sender is stopping (proto/gossip.md §5.8) */
} nsrv_gossip_type_t;

/* An announced host: 0..255 bytes of [A-Za-z0-9.:_-]; empty = "the address my datagram
 * came from" (a node bound to a wildcard address cannot know which of its addresses a
 * peer reaches). */
#define NSRV_GOSSIP_ANN_HOST_MAX 255

/* ANNOUNCE body: the NameServer endpoint and the HTTP status endpoint (port 0: none). */
typedef struct {
    nsrv_str_t ns_host;
    uint16_t ns_port; /* 1..65535 */
    nsrv_str_t status_host;
    uint16_t status_port;
} nsrv_gossip_announce_t;

/* The one validity rule of an ANNOUNCE body, for what is sent, received and configured
 * (ns_port 1..65535, hosts as NSRV_GOSSIP_ANN_HOST_MAX says): NULL if a is valid, else why
 * not (static text, for a log line). */
const char *nsrv_gossip_announce_problem(const nsrv_gossip_announce_t *a);

/*
 * Rejection reasons: the negative return codes NSRV_GOSSIP_E* of the decoders
 * and of nsrv_gossip_peer_check, defined in include/nsrv/common.h (one error
 * space, named by nsrv_strerror). nsrv_gossip_reason_index maps them to
 * 0..N-1 for counter arrays, in that order.
 */
#define NSRV_GOSSIP_NREASONS 14

/* 0..NSRV_GOSSIP_NREASONS-1 for a reason code, -1 for anything else. */
int nsrv_gossip_reason_index(int code);
/* "size", "version", ... "type" (the counter names); "?" if unknown. */
const char *nsrv_gossip_reason_name(int code);

/* One of a peer's public keys. */
typedef struct {
    uint8_t key_id;
    uint8_t pk[NSRV_SEAL_PK_LEN];
} nsrv_gossip_key_t;

/* Digest entry: the sender's own direct observation of one broker. */
typedef struct {
    uint64_t bkey;
    nsrv_data_version_t dv; /* counter, timestamp, state_version */
    uint32_t age_ms;        /* since the sender's last direct heartbeat, at src_mono_ms */
    uint8_t flags;          /* reserved: 0 on send, ignored on receive */
} nsrv_gossip_entry_t;

typedef enum {
    NSRV_GOSSIP_TOMB_UNREGISTER = 1, /* the broker sent UNREGISTER_BROKER */
    NSRV_GOSSIP_TOMB_EVICT = 2,      /* informational: the sender's own timeout */
} nsrv_gossip_tomb_reason_t;

typedef struct {
    uint64_t bkey;
    nsrv_data_version_t dv; /* the version the event applied to */
    uint8_t reason;         /* nsrv_gossip_tomb_reason_t */
    uint32_t age_ms;        /* since the event, at src_mono_ms */
} nsrv_gossip_tomb_t;

/*
 * A decoded (or to-be-encoded) datagram. Lists are sorted by strictly
 * increasing bkey (decoders reject anything else; encoders require it).
 */
typedef struct {
    uint8_t ver; /* NSRV_GOSSIP_VERSION */
    uint8_t type;
    nsrv_str_t cluster;
    uint8_t src;
    uint64_t src_inc;
    uint64_t seq;
    uint64_t src_mono_ms;
    uint64_t wall_ms;
    uint8_t dst;
    uint8_t key_id;
    union {
        struct {
            uint32_t round;
            uint16_t part, nparts; /* part < nparts */
            uint64_t key_lo, key_hi;
            const nsrv_gossip_entry_t *entries;
            size_t n;
        } full;
        struct {
            const nsrv_gossip_entry_t *entries;
            size_t n;
        } delta;
        struct {
            const nsrv_gossip_tomb_t *tombs;
            size_t n;
        } tomb;
        struct {
            uint8_t nonce[NSRV_GOSSIP_NONCE_LEN];
            const uint64_t *keys; /* n == 0: everything the responder holds */
            size_t n;
        } pull;
        nsrv_gossip_announce_t announce;
    } body;
    /* Set by decoding: the envelope's length, i.e. the bytes the signature covers. */
    size_t signed_len;
    const uint8_t *sig; /* set by decoding: the 64 signature bytes */
} nsrv_gossip_msg_t;

/*
 * The broker key: BLAKE2b-256 (unkeyed) over
 *   cluster ‖ 0x00 ‖ name ‖ 0x00 ‖ decimal(id) ‖ 0x00 ‖ addr
 * with the first 8 output bytes read as a big-endian u64. decimal(id) is the
 * shortest base-10 form, with '-' for negative ids.
 */
uint64_t nsrv_gossip_bkey(nsrv_str_t cluster, nsrv_str_t name, int64_t id, nsrv_str_t addr);

/*
 * Encodes m as envelope ‖ signature (signed with sk) and appends it to out.
 * Checks what the decoder would reject (cluster length, node ids, sorted
 * lists, counts, part < nparts, key range) and returns -EINVAL then, with
 * out unchanged. The size is not limited here (see the sender functions).
 * Returns 0 or -EINVAL.
 */
int nsrv_gossip_msg_encode(const nsrv_gossip_msg_t *m, const uint8_t sk[NSRV_SEAL_SK_LEN],
                           nsrv_buf_t *out);

/*
 * Parses the envelope fields before the body (no signature check, no
 * allocation). d[0..len) is a whole datagram including the signature.
 * Stops at the first field that fails, so a datagram of another version is
 * reported as NSRV_GOSSIP_EVERSION even if the rest differs. On success *m
 * holds the header fields and *body_off the offset of the body.
 * Returns 0, NSRV_GOSSIP_ESIZE (len < 64 + 12), NSRV_GOSSIP_EVERSION or
 * NSRV_GOSSIP_EDECODE.
 */
int nsrv_gossip_msg_decode_header(const uint8_t *d, size_t len, nsrv_gossip_msg_t *m,
                                  size_t *body_off);

/*
 * Decodes the body at body_off (after decode_header) into m, allocating
 * lists in arena. The body must end exactly where the signature begins
 * (len - 64). Counts are bounded by the bytes left before any allocation.
 * Returns 0, NSRV_GOSSIP_ETYPE (unknown type) or NSRV_GOSSIP_EDECODE.
 * Does not verify the signature.
 */
int nsrv_gossip_msg_decode_body(const uint8_t *d, size_t len, size_t body_off, nsrv_arena_t *arena,
                                nsrv_gossip_msg_t *m);

/* decode_header then decode_body; sets signed_len and sig. No signature check. */
int nsrv_gossip_msg_decode(const uint8_t *d, size_t len, nsrv_arena_t *arena, nsrv_gossip_msg_t *m);

/* ------------------------------------------------------------------------ */
/* Sending: envelope fields filled from a sender, lists split to a budget.  */

/*
 * The local node's sending state. seq starts at 1 and grows by one per
 * datagram or pull request, for the whole incarnation (whatever the dst).
 * mono_start_ms is the local monotonic time at which the incarnation
 * started: src_mono_ms = now_mono_ms - mono_start_ms.
 */
typedef struct {
    char cluster[NSRV_GOSSIP_CLUSTER_MAX + 1];
    size_t cluster_len;
    uint8_t node_id;
    uint64_t inc;
    uint64_t mono_start_ms;
    uint64_t next_seq;
    uint8_t key_id;
    uint8_t sk[NSRV_SEAL_SK_LEN];
} nsrv_gossip_sender_t;

/* Copies cluster and sk. Returns 0 or -EINVAL (cluster length 1..64, node id 1..254, inc >= 1). */
int nsrv_gossip_sender_init(nsrv_gossip_sender_t *s, nsrv_str_t cluster, uint8_t node_id,
                            uint64_t inc, uint64_t mono_start_ms, uint8_t key_id,
                            const uint8_t sk[NSRV_SEAL_SK_LEN]);
/* Switches the signing key (rotation, SIGHUP). */
void nsrv_gossip_sender_set_key(nsrv_gossip_sender_t *s, uint8_t key_id,
                                const uint8_t sk[NSRV_SEAL_SK_LEN]);
/* Wipes the secret key. */
void nsrv_gossip_sender_deinit(nsrv_gossip_sender_t *s);

/*
 * Receives each finished datagram; the bytes are valid during the call only.
 * A negative return stops the sending function, which returns it.
 */
typedef int (*nsrv_gossip_emit_fn)(void *ud, const uint8_t *dgram, size_t len);

/* Clocks and destination shared by one sending call. */
typedef struct {
    uint8_t dst;          /* a peer id, or NSRV_GOSSIP_DST_ANY */
    uint32_t budget;      /* NSRV_GOSSIP_DGRAM_MIN..NSRV_GOSSIP_DGRAM_MAX */
    uint64_t now_mono_ms; /* local monotonic clock */
    int64_t now_wall_ms;  /* local wall clock (the informational wall_ms field) */
} nsrv_gossip_send_opts_t;

/*
 * A full digest round: entries[0..n) sorted by strictly increasing bkey (all
 * of the node's direct observations) are cut into as many parts as needed so
 * that every datagram is <= budget bytes (measured on the real encoding).
 * The parts' key ranges are contiguous and cover [0, 2^64-1]; n == 0 gives
 * one empty part. Part i gets seq next_seq + i. Nothing is emitted if the
 * input is invalid (-EINVAL: unsorted, bad opts) or needs more than 65535
 * parts (NSRV_ETOOBIG).
 */
int nsrv_gossip_sender_full(nsrv_gossip_sender_t *s, const nsrv_gossip_send_opts_t *o,
                            uint32_t round, const nsrv_gossip_entry_t *entries, size_t n,
                            nsrv_gossip_emit_fn emit, void *ud);
/* DIGEST_DELTA datagrams carrying entries[0..n) (sorted, n >= 1), as many as the budget needs. */
int nsrv_gossip_sender_delta(nsrv_gossip_sender_t *s, const nsrv_gossip_send_opts_t *o,
                             const nsrv_gossip_entry_t *entries, size_t n, nsrv_gossip_emit_fn emit,
                             void *ud);
/* TOMBSTONE datagrams carrying tombs[0..n) (sorted, n >= 1). */
int nsrv_gossip_sender_tombs(nsrv_gossip_sender_t *s, const nsrv_gossip_send_opts_t *o,
                             const nsrv_gossip_tomb_t *tombs, size_t n, nsrv_gossip_emit_fn emit,
                             void *ud);
/* One SYNC_REQ datagram. */
int nsrv_gossip_sender_sync(nsrv_gossip_sender_t *s, const nsrv_gossip_send_opts_t *o,
                            nsrv_gossip_emit_fn emit, void *ud);
/* One ANNOUNCE datagram to o->dst. Returns 0, -EINVAL (bad host or port) or emit's code. */
int nsrv_gossip_sender_announce(nsrv_gossip_sender_t *s, const nsrv_gossip_send_opts_t *o,
                                const nsrv_gossip_announce_t *a, nsrv_gossip_emit_fn emit,
                                void *ud);
/* One LEAVE datagram to o->dst. */
int nsrv_gossip_sender_leave(nsrv_gossip_sender_t *s, const nsrv_gossip_send_opts_t *o,
                             nsrv_gossip_emit_fn emit, void *ud);
/*
 * A PULL_REQ for the TCP connection to peer o->dst (must be a node id, not
 * 255; o->budget is ignored): appends u32 BE length ‖ envelope ‖ signature
 * to out. keys[0..n) sorted, n <= NSRV_GOSSIP_PULL_MAX_KEYS, n == 0 = ALL.
 * The nonce should come from nsrv_seal_random and be kept for the response.
 * Returns 0, -EINVAL or NSRV_ETOOBIG.
 */
int nsrv_gossip_sender_pull_req(nsrv_gossip_sender_t *s, const nsrv_gossip_send_opts_t *o,
                                const uint8_t nonce[NSRV_GOSSIP_NONCE_LEN], const uint64_t *keys,
                                size_t n, nsrv_buf_t *out);

/* ------------------------------------------------------------------------ */
/* Pull response (TCP): length-prefixed frames, then a signed end frame.    */

/* One broker as a pull response carries it. */
typedef struct {
    uint64_t bkey; /* must equal nsrv_gossip_bkey(cluster, name, id, addr) */
    nsrv_str_t addr, cluster, name;
    int64_t id;
    nsrv_str_t ha_addr;   /* may be empty */
    nsrv_str_t zone_name; /* ptr NULL = absent (nil on the wire) */
    int8_t acting_master; /* -1 absent (old broker), 0 false, 1 true */
    uint64_t timeout_ms;
    nsrv_data_version_t dv;
    uint32_t age_ms;    /* since the responder's last direct heartbeat, when the frame was made */
    const uint8_t *reg; /* the last RegisterBrokerBody, JSON form, opaque here */
    size_t reg_len;
} nsrv_gossip_pull_item_t;

/* Responder side: frames are appended to the caller's output buffer. */
typedef struct {
    nsrv_seal_hash_t hash;
    uint8_t nonce[NSRV_GOSSIP_NONCE_LEN];
    uint64_t total;
    uint32_t count;
} nsrv_gossip_pull_enc_t;

void nsrv_gossip_pull_enc_init(nsrv_gossip_pull_enc_t *e,
                               const uint8_t nonce[NSRV_GOSSIP_NONCE_LEN]);
/*
 * Appends one broker frame. Returns 0; -EINVAL (bkey does not match the
 * identity, a string has a NUL byte or exceeds NSRV_GOSSIP_PULL_STR_MAX,
 * acting_master outside -1..1); or NSRV_ETOOBIG (the frame, the total or the
 * frame count would pass a limit the decoder enforces). On error nothing is
 * appended and the stream stays valid: the caller may skip that broker.
 */
int nsrv_gossip_pull_enc_item(nsrv_gossip_pull_enc_t *e, const nsrv_gossip_pull_item_t *it,
                              nsrv_buf_t *out);
/*
 * Appends the end frame [nil, count, src_inc, src_mono_ms, sig, key_id],
 * signed with sk (key_id names it). src_inc is the responder's incarnation
 * and src_mono_ms its monotonic ms since that incarnation started (as in its
 * datagram envelopes), read when the response is finished: the requester
 * uses the pair as a clock anchor (proto/gossip.md §7.6), so it must not be
 * read before the request arrived. Returns 0, or -EINVAL (src_inc 0 or
 * above NSRV_GOSSIP_TIME_MAX, src_mono_ms above it) with out unchanged. The
 * encoder is then spent.
 */
int nsrv_gossip_pull_enc_finish(nsrv_gossip_pull_enc_t *e, const uint8_t sk[NSRV_SEAL_SK_LEN],
                                uint8_t key_id, uint64_t src_inc, uint64_t src_mono_ms,
                                nsrv_buf_t *out);

/* Requester side: an incremental decoder fed with whatever TCP delivers. */
typedef struct nsrv_gossip_pull_dec nsrv_gossip_pull_dec_t;

/* keys: the responder's configured keys (copied). Never NULL. */
nsrv_gossip_pull_dec_t *nsrv_gossip_pull_dec_create(const uint8_t nonce[NSRV_GOSSIP_NONCE_LEN],
                                                    const nsrv_gossip_key_t *keys, size_t nkeys);
void nsrv_gossip_pull_dec_destroy(nsrv_gossip_pull_dec_t **d);
/*
 * Consumes data[0..len). Returns NSRV_AGAIN (more bytes needed), 0 (the end
 * frame arrived and its signature verified: the items are authentic), or a
 * negative error that sticks: NSRV_GOSSIP_EDECODE (malformed frame, bkey
 * mismatch, count mismatch, bytes after the end frame), NSRV_ETOOBIG (a
 * limit), NSRV_GOSSIP_EKEY_ID, NSRV_GOSSIP_EBAD_SIG. Memory grows with the
 * bytes actually received, never with a declared length.
 */
int nsrv_gossip_pull_dec_feed(nsrv_gossip_pull_dec_t *d, const void *data, size_t len);
/* After feed returned 0: the brokers, valid until destroy. Otherwise 0 items. */
size_t nsrv_gossip_pull_dec_items(const nsrv_gossip_pull_dec_t *d,
                                  const nsrv_gossip_pull_item_t **items);
/*
 * After feed returned 0: the responder's signed incarnation and monotonic
 * clock from the end frame (for nsrv_gossip_peer_anchor). Otherwise both 0.
 * Either pointer may be NULL.
 */
void nsrv_gossip_pull_dec_origin(const nsrv_gossip_pull_dec_t *d, uint64_t *src_inc,
                                 uint64_t *src_mono_ms);
