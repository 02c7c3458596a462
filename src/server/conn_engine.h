/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The client connection as an engine: everything a connection decides, with no socket,
 * no libuv and no clock of its own. conn.c (the driver) moves bytes: it feeds what it
 * read, reports what the socket took, and carries out the actions the engine returns;
 * the unit tests (tests/test_server_conn_engine.c) drive the same engine with a fake
 * runner and a fake socket.
 *
 * Rules it keeps (the product, pinned by those tests):
 *  - requests run in arrival order, and replies leave in request order: a reply that
 *    waits on a durable write holds a slot, and the replies behind it wait in it;
 *  - one read batch runs at most NSRV_CE_BATCH_MAX_FRAMES requests or NSRV_CE_BATCH_MAX_NS,
 *    but at least NSRV_CE_BATCH_MIN_FRAMES, then yields to the other connections;
 *  - light first: a plaintext connection whose reads keep coming (NSRV_CE_BUSY_STREAK in a
 *    row, each within NSRV_CE_BUSY_GAP_NS of the one before) is busy: what it reads is held
 *    (nsrv__ce_hold) and runs after the requests of connections that were quiet, so a few
 *    connections asking flat out do not make thousands of occasional clients wait behind
 *    them; a held request's latency counts from its read;
 *  - back-pressure: over connOutputLimitBytes of replies held (queued on the socket or
 *    behind a slot), NSRV_CE_MAX_SLOTS slots, or a frame on a worker, the connection is
 *    neither read nor processed, and resumes at half the limit;
 *  - frames of bigFrameWorkerBytes or more, and registrations whose body is at least
 *    NSRV_CE_REGISTER_BODY_WORKER_BYTES, are decoded on a worker, the connection paused;
 *  - idle: no byte read and none drained for serverChannelMaxIdleTimeSeconds closes the
 *    connection; with replies still queued it is reset (the peer stopped reading);
 *  - shutdown: a connection closes once drained (no partial request, nothing queued, no
 *    slot or job, no part of a TLS record), right away if it was served since the signal,
 *    else after the grace;
 *  - TLS: a connection's received bytes are records, decrypted by its session into the same
 *    framing; its replies are encrypted into records, so back-pressure, output caps and
 *    idle timeouts count ciphertext on the socket.
 *
 * Actions: every input returns a set of NSRV_CE_ACT_* bits. The one exception is sending:
 * what the socket does not take at once is part of the same step's back-pressure decision,
 * so the engine hands the reply batch to the transmit hook synchronously, and the
 * hook reports the bytes it queued (nsrv__ce_queued). Loop thread only.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "nsrv/buf.h"
#include "nsrv/remoting.h"
#include "out_batch.h"

struct nsrv_config;
struct nsrv_crypto_api;
struct nsrv_tls_session;

/* ---- policy ---- */

/* The most loop time one connection's batch may take before others get their turn. A route
 * query takes microseconds, so a turn is hundreds of them. */
#define NSRV_CE_BATCH_MAX_NS (1000 * 1000)
#define NSRV_CE_BATCH_MAX_FRAMES 256
/* A batch runs at least this many requests whatever they cost, so a connection of slow
 * requests (big topic lists, or any under a sanitizer) still moves at a useful pace and
 * fills its output queue, which is what back-pressure watches. */
#define NSRV_CE_BATCH_MIN_FRAMES 16
/* Light first: reads this close together, this many in a row, make a connection busy. A
 * client's route update asks its topics one after another (a round trip apart), so a client
 * of a few topics stays light; a connection asking without pause is busy after a few turns. */
#define NSRV_CE_BUSY_GAP_NS (1000 * 1000)
#define NSRV_CE_BUSY_STREAK 8
/* Replies batched from one read are sent once they pass this size. */
#define NSRV_CE_OUT_FLUSH_BYTES (256 * 1024)
/* Deferred replies one connection may have waiting; then it is not read until one is sent. */
#define NSRV_CE_MAX_SLOTS 4096
/* Replies are encrypted and handed to the socket in pieces of this size, so a large reply
 * never sits twice in memory as a whole. */
#define NSRV_CE_TLS_SEND_CHUNK (64 * 1024)
/* Read-buffer headroom offered per read into a connection's own buffer. */
#define NSRV_CE_READ_CHUNK (64 * 1024)
/* Frames from this size on have the loop-thread CPU they take recorded (/metrics). */
#define NSRV_CE_BIG_FRAME_MEASURE_BYTES (64 * 1024)
/* A REGISTER_BROKER body from this size on is decoded on a worker whatever the frame's size
 * (with the worker on): a compressed body of 10,000 topics is ~40 KiB and inflates to ~1 MiB
 * of JSON text, milliseconds of decode. Its header, decoded on the loop to see the code, is
 * small. */
#define NSRV_CE_REGISTER_BODY_WORKER_BYTES (4 * 1024)
/* Shutdown: a connection with no request since the signal is closed only after this long.
 * Closing an idle connection races the client's next request: the client still sees the
 * channel open until it has processed our FIN (on a loaded machine, tens of ms), writes,
 * and that request fails. A client that asks within this window is answered and its
 * connection closed right behind the reply instead, so it sees the close before it can
 * ask again (docs/compatibility.md, "Graceful shutdown"). */
#define NSRV_CE_SHUTDOWN_IDLE_GRACE_MS 250

/* ---- actions ---- */

enum {
    NSRV_CE_ACT_CLOSE = 1u << 0,    /* close: close_why, with RST if reset_on_close */
    NSRV_CE_ACT_OFFLOAD = 1u << 1,  /* decode offload (buffer, offset, length) on a worker */
    NSRV_CE_ACT_YIELD = 1u << 2,    /* call nsrv__ce_resume on the next loop turn */
    NSRV_CE_ACT_READ_ON = 1u << 3,  /* start reading */
    NSRV_CE_ACT_READ_OFF = 1u << 4, /* stop reading */
    NSRV_CE_ACT_INPUT = 1u << 5,    /* the input buffer changed size (memory accounting) */
    NSRV_CE_ACT_FINISH = 1u << 6,   /* shutting down and drained: close unless bytes wait */
    NSRV_CE_ACT_STALLED = 1u << 7,  /* with CLOSE: the peer stopped reading its replies */
    NSRV_CE_ACT_TLS_UP = 1u << 8,   /* the TLS handshake completed (for the log) */
};

typedef struct nsrv_ce nsrv_ce_t;

/* What the runner did with one whole frame. */
typedef enum {
    NSRV_CE_RAN,          /* run: replied (nsrv__ce_reply), deferred (a slot), or oneway */
    NSRV_CE_BAD,          /* undecodable: close with *why */
    NSRV_CE_OFFLOAD_COPY, /* its body is costly: decode it again on a worker */
} nsrv_ce_run_t;

/* What every connection of a server shares: limits, the reply batch, counters. */
typedef struct nsrv_ce_host {
    const struct nsrv_config *cfg; /* maxFrameLength, connOutputLimitBytes, bigFrameWorkerBytes */
    nsrv_out_batch_t *out;         /* the replies of the batch being run, sent by transmit */
    void *ud;                      /* passed to the hooks */
    bool shutting_down;
    bool idle_grace_over; /* shutdown: connections not served since may be closed */
    uint64_t batch_yields_total;
    uint64_t reads_held_total; /* light first: busy connections' reads held */
    uint64_t bad_frames_total;
    size_t replies_pending; /* reserved reply slots not yet filled */
    uint64_t tls_handshakes_ok, tls_handshakes_failed;
    nsrv_buf_t tls_plain; /* one read's decrypted bytes */
    nsrv_buf_t tls_flat;  /* one batch's replies as one run for the session to encrypt */
} nsrv_ce_host_t;

/*
 * The two hooks, defined once by whoever links the engine (conn.c; a unit test defines its
 * own): resolved at link time rather than through pointers, so the request path pays no
 * indirect call and the link-time optimiser can inline the runner into the batch loop.
 *
 * run: runs the request of one whole frame (its length prefix included). *now_ns: the start
 * of its turn in, its end out (the batch's time budget).
 */
nsrv_ce_run_t nsrv__ce_run(void *ud, nsrv_ce_t *e, const uint8_t *frame, size_t len,
                           uint64_t *now_ns, const char **why);
/* transmit: writes host->out to e's peer and empties it; reports what it could not write at
 * once with nsrv__ce_queued. May close the connection (nsrv__ce_closed). */
void nsrv__ce_transmit(void *ud, nsrv_ce_t *e);
/* send_raw: writes bytes as they are (a TLS connection's records), as transmit does. */
void nsrv__ce_send_raw(void *ud, nsrv_ce_t *e, const char *data, size_t len);

/*
 * A deferred reply (processor.h) in its connection's reply queue, with the
 * replies to later requests that wait behind it, up to the next slot.
 */
struct nsrv_reply_slot {
    struct nsrv_reply_slot *next;
    nsrv_ce_t *eng; /* NULL once the connection closed: freed when filled */
    nsrv_ce_host_t *host;
    bool filled;
    int metrics_slot;  /* the request's metrics slot (metrics.h) */
    uint64_t start_ns; /* when its request's turn began: its latency ends at the fill */
    nsrv_buf_t reply;  /* this slot's reply, once filled */
    nsrv_buf_t after;  /* replies to later requests on the connection */
};

/* One connection's protocol state. The driver reads the fields, and changes none. */
struct nsrv_ce {
    nsrv_ce_host_t *host;
    nsrv_buf_t in; /* received bytes; [in_off, in.len) not yet consumed */
    size_t in_off;
    size_t out_pending;        /* reply bytes the socket has queued, not yet written */
    uint64_t out_queued_total; /* reply bytes ever queued (idle: drained = this - still queued) */
    uint64_t out_drained_seen; /* of those, drained at the last tick */
    uint64_t last_active_ms;   /* last byte read or reply byte written */
    uint64_t last_read_ns;     /* light first: the last plaintext read */
    uint64_t held_ns;          /* light first: when the held input was read */
    struct nsrv_reply_slot *slots, *slots_tail; /* deferred replies, oldest first */
    size_t n_slots;
    size_t held_bytes;         /* reply bytes waiting in slots */
    bool reading;              /* wants to read (the driver follows READ_ON/READ_OFF) */
    bool yielded;              /* stopped a batch at its budget: resumes next loop turn */
    bool yield_paused_reading; /* it was reading when it yielded */
    bool in_batch;             /* inside a batch: its writes are stamped at its end */
    bool job;                  /* a frame of it is on a worker */
    bool served_in_shutdown;   /* answered a request after the signal: close once drained */
    bool closed;               /* closed, or a close was returned */
    bool reset_on_close;       /* close with RST: the kernel drops unsent bytes too */
    bool held;                 /* light first: input held for after the quiet connections */
    uint8_t read_streak;       /* reads in a row, each within NSRV_CE_BUSY_GAP_NS */
    const char *close_why;
    size_t big_frame_len; /* the batch stopped at a whole frame this big: offload it */
    /* NSRV_CE_ACT_OFFLOAD: the frame is offload[off, off + len); take the buffer. */
    nsrv_buf_t offload;
    size_t offload_off, offload_len;
    unsigned act; /* actions of the input being handled */
    /* TLS (NULL: plaintext): the session and the function table that drives it. */
    struct nsrv_tls_session *tls;
    const struct nsrv_crypto_api *crypto;
};

/* ---- inputs ---- */

/* A new connection at now_ms; it wants to read. */
void nsrv__ce_init(nsrv_ce_t *e, nsrv_ce_host_t *host, uint64_t now_ms);
/* Frees what the engine holds (after nsrv__ce_closed). */
void nsrv__ce_free(nsrv_ce_t *e);

/* The connection speaks TLS from now on, through session (driven by crypto's table). */
void nsrv__ce_start_tls(nsrv_ce_t *e, const struct nsrv_crypto_api *crypto,
                        struct nsrv_tls_session *session);
/* n received bytes of a TLS connection (records): decrypted, then run as nsrv__ce_feed. */
unsigned nsrv__ce_feed_tls(nsrv_ce_t *e, const char *data, size_t n, uint64_t now_ns);

/* Bytes were read at now_ms (ciphertext too, before it yields a request): the driver says
 * so for every read, before feeding what it read. */
static inline void nsrv__ce_heard(nsrv_ce_t *e, uint64_t now_ms) {
    e->last_active_ms = now_ms;
}
/* Moves the frame of NSRV_CE_ACT_OFFLOAD out: frame_buf[off, off + len). */
void nsrv__ce_take_offload(nsrv_ce_t *e, nsrv_buf_t *frame_buf, size_t *off, size_t *len);

/* Where the next read may land in the connection's own buffer, or NULL when the read
 * should go to a shared buffer (nothing of a partial frame held). */
char *nsrv__ce_read_room(nsrv_ce_t *e, size_t *room);
/* n received bytes at p (not in the engine's buffer), read at now_ns. */
unsigned nsrv__ce_feed(nsrv_ce_t *e, const uint8_t *p, size_t n, uint64_t now_ns);
/* n received bytes that landed where nsrv__ce_read_room said. */
unsigned nsrv__ce_feed_landed(nsrv_ce_t *e, size_t n, uint64_t now_ns);
/* Light first: n plaintext bytes at p read at now_ns (not in the engine's buffer). Returns
 * true when the connection is busy and the bytes are held: the driver runs them later with
 * nsrv__ce_run_held; false: nothing kept, the driver feeds them (nsrv__ce_feed). */
bool nsrv__ce_hold(nsrv_ce_t *e, const uint8_t *p, size_t n, uint64_t now_ns);
/* Runs the input nsrv__ce_hold kept (if a read since has not run it already). */
unsigned nsrv__ce_run_held(nsrv_ce_t *e, uint64_t now_ns);
/* The next loop turn after NSRV_CE_ACT_YIELD. */
unsigned nsrv__ce_resume(nsrv_ce_t *e, uint64_t now_ns);

/* The transmit hook could not write len bytes at once: the socket queued them. */
void nsrv__ce_queued(nsrv_ce_t *e, size_t len);
/* len queued bytes are written (or dropped: the connection closed). */
void nsrv__ce_write_done(nsrv_ce_t *e, size_t len);
/* After a successful queued write: the connection may read and run again. */
unsigned nsrv__ce_drained(nsrv_ce_t *e, uint64_t now_ns);

/* A request (not a reply of a peer's) starts its turn. */
static inline void nsrv__ce_request_started(nsrv_ce_t *e) {
    if (e->host->shutting_down)
        e->served_in_shutdown = true;
}
/* Appends the reply to the request being run; head: its bytes up to the body already
 * encoded (nsrv_cmd_encode_head), or NULL. */
void nsrv__ce_reply(nsrv_ce_t *e, const nsrv_cmd_t *resp, const void *head, size_t head_len);
/* Sends the replies appended outside a batch (a worker's request); CLOSE if that failed. */
unsigned nsrv__ce_flush(nsrv_ce_t *e);
/* The request being run defers its reply: a slot in the reply queue. */
struct nsrv_reply_slot *nsrv__ce_reserve(nsrv_ce_t *e, int metrics_slot, uint64_t start_ns);
/* Fills slot with resp, sends every filled slot at the head (with the replies behind each)
 * and resumes the connection. A slot of a closed connection is freed. */
unsigned nsrv__ce_fill(struct nsrv_reply_slot *slot, const nsrv_cmd_t *resp, uint64_t now_ns);

/* The worker's frame has run: what the connection holds runs on the next loop turn. */
unsigned nsrv__ce_job_done(nsrv_ce_t *e);

/* Once a second: idle and stuck-reader reaping. write_queue: bytes the socket still has
 * queued; idle_ms: 0 for no limit. */
unsigned nsrv__ce_tick(nsrv_ce_t *e, uint64_t now_ms, uint64_t idle_ms, size_t write_queue);
/* A server-wide memory cap sheds this connection: its close is a reset (RST), so the kernel
 * drops the unsent bytes too. */
static inline void nsrv__ce_reset_on_close(nsrv_ce_t *e) {
    e->reset_on_close = true;
}
/* Shutting down: nothing of this connection is in flight by the engine's account. */
bool nsrv__ce_finished(const nsrv_ce_t *e);
/* The driver closed the connection: sent-never replies are dropped, slots still waiting
 * for their write are orphaned (freed when filled). */
void nsrv__ce_closed(nsrv_ce_t *e);
/* Too much queued for its peer, or a frame on a worker: neither read nor processed. */
bool nsrv__ce_blocked(const nsrv_ce_t *e);
