/* SPDX-License-Identifier: Apache-2.0 */
/* The connection engine (conn_engine.h): the decisions of one client connection. */
#include "conn_engine.h"

#include <string.h>

#include "nsrv/crypto.h"
#include "nsrv/alloc.h"
#include "nsrv/common.h"
#include "nsrv/config.h"

static size_t out_limit(const nsrv_ce_t *e) {
    return (size_t)e->host->cfg->conn_output_limit_bytes;
}

static size_t max_frame(const nsrv_ce_t *e) {
    return (size_t)e->host->cfg->max_frame_length;
}

/* Reply bytes the connection holds: queued on the socket, or waiting behind a slot. */
static size_t out_held(const nsrv_ce_t *e) {
    return e->out_pending + e->held_bytes;
}

/* Closed, or a close decided in this input: nothing more runs. */
static bool stopped(const nsrv_ce_t *e) {
    return e->closed;
}

bool nsrv__ce_blocked(const nsrv_ce_t *e) {
    return out_held(e) > out_limit(e) || e->n_slots >= NSRV_CE_MAX_SLOTS || e->job;
}

/* Reading changed in this input (an odd number of times): finish() says which way. */
#define READ_TOGGLED (1u << 31)

static void set_reading(nsrv_ce_t *e, bool on) {
    if (stopped(e) || e->reading == on)
        return;
    e->reading = on;
    e->act ^= READ_TOGGLED;
}

static void close_with(nsrv_ce_t *e, const char *why) {
    if (stopped(e))
        return;
    e->close_why = why;
    e->closed = true;
    e->act |= NSRV_CE_ACT_CLOSE;
}

/* Starts an input; finish() returns its actions. */
static void begin(nsrv_ce_t *e) {
    e->act = 0;
}

/* Inlined: it ends every read's batch, where the usual answer is "nothing to do". */
__attribute__((always_inline)) static inline unsigned finish(nsrv_ce_t *e) {
    unsigned act = e->act;
    if (!act && !e->host->shutting_down)
        return 0;
    if ((act & NSRV_CE_ACT_CLOSE) || stopped(e))
        return act & (NSRV_CE_ACT_CLOSE | NSRV_CE_ACT_STALLED);
    if (act & READ_TOGGLED)
        act = (act & ~READ_TOGGLED) | (e->reading ? NSRV_CE_ACT_READ_ON : NSRV_CE_ACT_READ_OFF);
    if (!e->in_batch && e->host->shutting_down && nsrv__ce_finished(e))
        act |= NSRV_CE_ACT_FINISH;
    return act;
}

void nsrv__ce_init(nsrv_ce_t *e, nsrv_ce_host_t *host, uint64_t now_ms) {
    memset(e, 0, sizeof *e);
    e->host = host;
    nsrv_buf_init(&e->in);
    nsrv_buf_init(&e->offload);
    e->last_active_ms = now_ms;
    e->reading = true;
}

static void slot_free(struct nsrv_reply_slot *s) {
    nsrv_buf_deinit(&s->reply);
    nsrv_buf_deinit(&s->after);
    nsrv_free(s);
}

void nsrv__ce_closed(nsrv_ce_t *e) {
    e->closed = true;
    e->reading = false;
    for (struct nsrv_reply_slot *s = e->slots, *next; s; s = next) {
        next = s->next;
        if (s->filled) {
            slot_free(s);
        } else {
            s->eng = NULL;
            s->next = NULL;
            nsrv_buf_deinit(&s->after);
        }
    }
    e->slots = e->slots_tail = NULL;
    e->n_slots = 0;
    e->held_bytes = 0;
    e->job = false;
}

void nsrv__ce_free(nsrv_ce_t *e) {
    nsrv_buf_deinit(&e->in);
    nsrv_buf_deinit(&e->offload);
    if (e->tls)
        e->crypto->session_free(e->tls);
    e->tls = NULL;
}

/* Sends what the session produced: handshake messages, records, alerts. */
static void tls_flush_output(nsrv_ce_t *e) {
    const char *p = NULL;
    size_t n = e->crypto->session_output(e->tls, &p);
    if (n == 0)
        return; /* most reads produce nothing to send: no BIO calls to empty an empty BIO */
    nsrv__ce_send_raw(e->host->ud, e, p, n);
    e->crypto->session_output_clear(e->tls);
}

/* Encrypts the batch's replies as one plaintext run, so the session writes full records
 * rather than one per piece, and sends the records. The run is built in a buffer the host
 * keeps (a malloc and free per batch otherwise), dropped after an unusually large batch. */
static void tls_transmit(nsrv_ce_t *e) {
    nsrv_out_batch_t *out = e->host->out;
    nsrv_buf_t *flat = &e->host->tls_flat;
    struct iovec iov[NSRV_OUT_MAX_SEGS];
    unsigned n_iov = nsrv__out_iov(out, iov);
    nsrv_buf_reset(flat);
    nsrv_buf_reserve(flat, out->total);
    for (unsigned i = 0; i < n_iov; i++)
        nsrv_buf_append(flat, iov[i].iov_base, iov[i].iov_len);
    nsrv__out_reset(out);
    for (size_t off = 0; off < flat->len && !stopped(e);) {
        size_t chunk =
            flat->len - off < NSRV_CE_TLS_SEND_CHUNK ? flat->len - off : NSRV_CE_TLS_SEND_CHUNK;
        if (!e->crypto->session_write(e->tls, flat->data + off, chunk)) {
            close_with(e, "TLS write failed");
            break;
        }
        tls_flush_output(e);
        off += chunk;
    }
    if (flat->cap > NSRV_CE_TLS_SEND_CHUNK)
        nsrv_buf_deinit(flat);
}

/* Sends the batch's replies (dropped if the connection closed). Inlined (as run_batch):
 * both end every batch of the route-query path. */
__attribute__((always_inline)) static inline void transmit(nsrv_ce_t *e) {
    nsrv_out_batch_t *out = e->host->out;
    if (stopped(e) || out->total == 0) {
        nsrv__out_reset(out);
        return;
    }
    if (e->tls)
        tls_transmit(e);
    else
        nsrv__ce_transmit(e->host->ud, e);
}

unsigned nsrv__ce_flush(nsrv_ce_t *e) {
    begin(e);
    transmit(e);
    return finish(e) | (e->close_why && e->closed ? NSRV_CE_ACT_CLOSE : 0);
}

void nsrv__ce_reply(nsrv_ce_t *e, const nsrv_cmd_t *resp, const void *head, size_t head_len) {
    if (!e->slots_tail) {
        if (!nsrv__out_add_head(e->host->out, resp, head, head_len)) {
            transmit(e);
            nsrv__out_add_head(e->host->out, resp, head, head_len);
        }
        return;
    }
    nsrv_buf_t *after = &e->slots_tail->after;
    size_t before = after->len;
    nsrv_cmd_encode(after, resp);
    e->held_bytes += after->len - before;
}

/* The whole frame at in[in_off, +big_frame_len) goes to a worker: the buffer moves to
 * offload (no copy of the frame), the bytes behind it stay in a fresh input buffer. */
static void offload_in_place(nsrv_ce_t *e) {
    nsrv_buf_deinit(&e->offload);
    e->offload = e->in;
    e->offload_off = e->in_off;
    e->offload_len = e->big_frame_len;
    e->big_frame_len = 0;
    nsrv_buf_init(&e->in);
    size_t rest_off = e->offload_off + e->offload_len;
    if (rest_off < e->offload.len)
        nsrv_buf_append(&e->in, e->offload.data + rest_off, e->offload.len - rest_off);
    e->in_off = 0;
    e->job = true;
    e->act |= NSRV_CE_ACT_OFFLOAD | NSRV_CE_ACT_INPUT;
}

static void offload_copy(nsrv_ce_t *e, const uint8_t *frame, size_t len) {
    nsrv_buf_reset(&e->offload);
    nsrv_buf_append(&e->offload, frame, len);
    e->offload_off = 0;
    e->offload_len = len;
    e->job = true;
    e->act |= NSRV_CE_ACT_OFFLOAD;
}

/*
 * Runs every whole frame in p[0..avail) while the connection is open, under its output
 * limit and within its batch budget (from start_ns). first_ns: when the first request's turn
 * began (its read: earlier than start_ns for held input). Returns the bytes consumed; what
 * is left is a partial frame, or frames held back by back-pressure or for the next loop turn
 * (yielded).
 */
__attribute__((always_inline)) static inline size_t
run_batch(nsrv_ce_t *e, const uint8_t *p, size_t avail, uint64_t start_ns, uint64_t first_ns) {
    nsrv_ce_host_t *h = e->host;
    size_t max_len = max_frame(e);
    size_t offload_min = (size_t)h->cfg->big_frame_worker_bytes;
    size_t used = 0;
    unsigned frames = 0;
    uint64_t now_ns = first_ns; /* the first request's turn began at its read */
    e->in_batch = true;
    while (!stopped(e) && !nsrv__ce_blocked(e)) {
        size_t frame_len = 0;
        int rc = nsrv_frame_peek(p + used, avail - used, max_len, &frame_len);
        if (rc == NSRV_AGAIN)
            break;
        if (rc == 0 && frames >= NSRV_CE_BATCH_MIN_FRAMES &&
            (frames >= NSRV_CE_BATCH_MAX_FRAMES ||
             (int64_t)(now_ns - start_ns) >= NSRV_CE_BATCH_MAX_NS)) {
            e->yielded = true; /* a whole frame waits: it runs on the next loop turn */
            h->batch_yields_total++;
            break;
        }
        if (rc < 0) {
            h->bad_frames_total++;
            close_with(e, "bad frame length");
            break;
        }
        if (offload_min > 0 && frame_len >= offload_min) {
            e->big_frame_len = frame_len; /* the caller hands it over from its own buffer */
            break;
        }
        const char *why = NULL;
        nsrv_ce_run_t r = nsrv__ce_run(h->ud, e, p + used, frame_len, &now_ns, &why);
        if (r == NSRV_CE_BAD) {
            h->bad_frames_total++;
            close_with(e, why ? why : "bad frame");
            break;
        }
        used += frame_len;
        frames++;
        if (r == NSRV_CE_OFFLOAD_COPY) {
            offload_copy(e, p + used - frame_len, frame_len);
            break; /* the connection waits for the job (blocked) */
        }
        if (h->out->total >= NSRV_CE_OUT_FLUSH_BYTES)
            transmit(e);
    }
    /* The batch's replies go out now: the last request's end stands for their write time. */
    if (frames)
        e->last_active_ms = nsrv_mono_ns_to_ms(now_ns);
    transmit(e);
    e->in_batch = false;
    if (stopped(e))
        return used;
    if (e->yielded) {
        if (e->reading)
            e->yield_paused_reading = true; /* resume turns reading back on */
        e->act |= NSRV_CE_ACT_YIELD;
    }
    if (nsrv__ce_blocked(e) || e->yielded)
        set_reading(e, false);
    return used;
}

/* Keeps unprocessed bytes in the connection's own buffer, sized for the whole frame when
 * its length is known so the rest is read straight into place. */
static void keep_rest(nsrv_ce_t *e, const uint8_t *p, size_t n) {
    size_t frame_len = 0;
    nsrv_buf_append(&e->in, p, n);
    if (nsrv_frame_peek(p, n, max_frame(e), &frame_len) == NSRV_AGAIN && frame_len > n)
        nsrv_buf_reserve(&e->in, frame_len - n);
}

/* Runs what the connection's own buffer holds (a partial frame that has grown, or frames
 * held back), and frees the buffer once it is empty so idle connections cost no buffer. */
static void run_own(nsrv_ce_t *e, uint64_t now_ns) {
    uint64_t first_ns = e->held ? e->held_ns : now_ns;
    e->held = false;
    size_t avail = e->in.len - e->in_off;
    if (avail == 0)
        return;
    e->in_off += run_batch(e, (const uint8_t *)e->in.data + e->in_off, avail, now_ns, first_ns);
    if (stopped(e))
        return;
    if (e->big_frame_len) {
        offload_in_place(e);
        set_reading(e, false); /* until the job has run (nsrv__ce_job_done) */
        return;
    }
    if (e->in_off == e->in.len) {
        e->in_off = 0;
        nsrv_buf_deinit(&e->in);
        e->act |= NSRV_CE_ACT_INPUT;
    } else if (e->in_off > e->in.cap / 2) {
        memmove(e->in.data, e->in.data + e->in_off, e->in.len - e->in_off);
        e->in.len -= e->in_off;
        e->in_off = 0;
    }
}

void nsrv__ce_take_offload(nsrv_ce_t *e, nsrv_buf_t *frame_buf, size_t *off, size_t *len) {
    *frame_buf = e->offload;
    *off = e->offload_off;
    *len = e->offload_len;
    nsrv_buf_init(&e->offload);
    e->offload_off = e->offload_len = 0;
}

char *nsrv__ce_read_room(nsrv_ce_t *e, size_t *room) {
    if (e->in.len == e->in_off)
        return NULL;
    nsrv_buf_reserve(&e->in, NSRV_CE_READ_CHUNK);
    /* Keep one byte for the buffer's trailing NUL. At most a chunk a read even when a big
     * frame's buffer has room for more: libuv reads up to 32 times a turn while reads fill
     * the buffer, and one read of megabytes (copy and page faults) would hold the loop. */
    size_t r = e->in.cap - e->in.len - 1;
    *room = r < NSRV_CE_READ_CHUNK ? r : NSRV_CE_READ_CHUNK;
    return e->in.data + e->in.len;
}

unsigned nsrv__ce_feed(nsrv_ce_t *e, const uint8_t *p, size_t n, uint64_t now_ns) {
    begin(e);
    if (stopped(e))
        return 0;
    if (e->in.len != e->in_off) { /* behind a partial frame or held-back frames */
        nsrv_buf_append(&e->in, p, n);
        run_own(e, now_ns);
        return finish(e);
    }
    size_t used = run_batch(e, p, n, now_ns, now_ns);
    if (!stopped(e) && used < n)
        keep_rest(e, p + used, n - used);
    if (!stopped(e) && e->big_frame_len) {
        e->big_frame_len = 0;
        run_own(e, now_ns); /* finds the frame again, now in the connection's own buffer */
    }
    return finish(e);
}

bool nsrv__ce_hold(nsrv_ce_t *e, const uint8_t *p, size_t n, uint64_t now_ns) {
    bool near = now_ns - e->last_read_ns < NSRV_CE_BUSY_GAP_NS;
    e->last_read_ns = now_ns;
    e->read_streak = near ? (uint8_t)(e->read_streak + (e->read_streak < NSRV_CE_BUSY_STREAK)) : 0;
    /* Only a clean start: input already kept (a partial frame, a yield, back-pressure) has
     * its own rules, and in shutdown every request runs as it comes. */
    if (e->read_streak < NSRV_CE_BUSY_STREAK || e->tls || stopped(e) || e->yielded ||
        e->in.len != e->in_off || nsrv__ce_blocked(e) || e->host->shutting_down)
        return false;
    nsrv_buf_append(&e->in, p, n);
    e->held = true;
    e->held_ns = now_ns;
    e->host->reads_held_total++;
    return true;
}

unsigned nsrv__ce_run_held(nsrv_ce_t *e, uint64_t now_ns) {
    begin(e);
    if (stopped(e) || !e->held)
        return 0;
    run_own(e, now_ns);
    return finish(e);
}

unsigned nsrv__ce_feed_landed(nsrv_ce_t *e, size_t n, uint64_t now_ns) {
    begin(e);
    if (stopped(e))
        return 0;
    e->in.len += n;
    run_own(e, now_ns);
    return finish(e);
}

/* After output drained or a slot was sent: run what is buffered, read again. */
static void resume_after_output(nsrv_ce_t *e, uint64_t now_ns) {
    if (stopped(e) || e->in_batch)
        return;
    /* Resume at half the limit so a slow reader is not toggled on every write. */
    if (out_held(e) <= out_limit(e) / 2 && e->n_slots < NSRV_CE_MAX_SLOTS) {
        run_own(e, now_ns);
        if (!stopped(e) && !nsrv__ce_blocked(e) && !e->yielded && !e->host->shutting_down)
            set_reading(e, true);
    }
}

void nsrv__ce_queued(nsrv_ce_t *e, size_t len) {
    e->out_pending += len;
    e->out_queued_total += len;
}

void nsrv__ce_write_done(nsrv_ce_t *e, size_t len) {
    e->out_pending -= len;
}

unsigned nsrv__ce_drained(nsrv_ce_t *e, uint64_t now_ns) {
    begin(e);
    if (stopped(e))
        return 0;
    e->last_active_ms = nsrv_mono_ns_to_ms(now_ns);
    resume_after_output(e, now_ns);
    return finish(e);
}

unsigned nsrv__ce_resume(nsrv_ce_t *e, uint64_t now_ns) {
    begin(e);
    if (stopped(e) || !e->yielded)
        return 0;
    e->yielded = false;
    run_own(e, now_ns);
    if (stopped(e) || e->yielded)
        return finish(e); /* yielded again: still paused */
    /* Restore what the yield paused. While shutting down, a connection that back-pressure
     * had stopped stays stopped, as after a write. */
    if (!nsrv__ce_blocked(e) && (e->yield_paused_reading || !e->host->shutting_down))
        set_reading(e, true);
    e->yield_paused_reading = false;
    return finish(e);
}

unsigned nsrv__ce_job_done(nsrv_ce_t *e) {
    begin(e);
    e->job = false;
    if (stopped(e))
        return 0;
    /*
     * Not now: the big request just run (and the freeing of its multi-megabyte buffers)
     * took this loop turn's share; what the connection holds next runs as a yielded batch
     * on the next turn, after other connections' ready input. Reading was on when the job
     * paused it, so the resume turns it back on (in shutdown too).
     */
    e->yielded = true;
    e->yield_paused_reading = true;
    e->act |= NSRV_CE_ACT_YIELD;
    unsigned act = finish(e);
    return act & ~NSRV_CE_ACT_FINISH; /* not finished: the yielded batch runs first */
}

struct nsrv_reply_slot *nsrv__ce_reserve(nsrv_ce_t *e, int metrics_slot, uint64_t start_ns) {
    if (stopped(e))
        return NULL;
    struct nsrv_reply_slot *s = nsrv_calloc(1, sizeof *s);
    s->eng = e;
    s->host = e->host;
    s->metrics_slot = metrics_slot;
    s->start_ns = start_ns;
    nsrv_buf_init(&s->reply);
    nsrv_buf_init(&s->after);
    if (e->slots_tail)
        e->slots_tail->next = s;
    else
        e->slots = s;
    e->slots_tail = s;
    e->n_slots++;
    e->host->replies_pending++;
    return s;
}

unsigned nsrv__ce_fill(struct nsrv_reply_slot *slot, const nsrv_cmd_t *resp, uint64_t now_ns) {
    slot->host->replies_pending--;
    nsrv_ce_t *e = slot->eng;
    if (!e) {
        slot_free(slot);
        return 0;
    }
    unsigned outer = e->act; /* a fill from within a batch's request: keep the batch's */
    begin(e);
    nsrv_cmd_encode(&slot->reply, resp);
    slot->filled = true;
    e->held_bytes += slot->reply.len;
    /* Send every filled slot at the head, with the replies held behind each, in order. */
    nsrv_out_batch_t *out = e->host->out;
    while (e->slots && e->slots->filled && !stopped(e)) {
        struct nsrv_reply_slot *s = e->slots;
        e->slots = s->next;
        if (!e->slots)
            e->slots_tail = NULL;
        e->n_slots--;
        e->held_bytes -= s->reply.len + s->after.len;
        if (!nsrv__out_add_bytes(out, s->reply.data, s->reply.len)) {
            transmit(e);
            nsrv__out_add_bytes(out, s->reply.data, s->reply.len);
        }
        if (!nsrv__out_add_bytes(out, s->after.data, s->after.len)) {
            transmit(e);
            nsrv__out_add_bytes(out, s->after.data, s->after.len);
        }
        slot_free(s);
    }
    transmit(e);
    resume_after_output(e, now_ns);
    unsigned act = finish(e);
    if (e->in_batch)
        e->act = outer;
    return act;
}

unsigned nsrv__ce_tick(nsrv_ce_t *e, uint64_t now_ms, uint64_t idle_ms, size_t write_queue) {
    begin(e);
    if (stopped(e) || idle_ms == 0)
        return 0;
    /* The socket lowers its write queue as the kernel takes bytes, also within one queued
     * write, so a peer draining slowly shows progress here. */
    uint64_t drained = e->out_queued_total - write_queue;
    if (drained != e->out_drained_seen) {
        e->out_drained_seen = drained;
        e->last_active_ms = now_ms;
        return 0;
    }
    if (now_ms - e->last_active_ms < idle_ms)
        return 0;
    if (e->out_pending == 0) {
        close_with(e, "idle");
        return finish(e);
    }
    /* A peer that stopped reading: reset, so the kernel drops the unsent bytes as well
     * instead of keeping them for an orphan. */
    e->reset_on_close = true;
    close_with(e, "peer stopped reading");
    e->act |= NSRV_CE_ACT_STALLED;
    return finish(e);
}

bool nsrv__ce_finished(const nsrv_ce_t *e) {
    /* A deferred reply (a durable write in progress) is a request still in flight. */
    if (e->closed || e->job || e->out_pending > 0 || e->slots || e->in_off != e->in.len)
        return false;
    /* Part of a TLS record received and not yet decryptable: a request in flight. */
    if (e->tls && e->crypto->session_input_pending(e->tls))
        return false;
    /* Idle since the signal: wait for its next request or the grace. */
    return e->served_in_shutdown || e->host->idle_grace_over;
}

void nsrv__ce_start_tls(nsrv_ce_t *e, const nsrv_crypto_api_t *crypto,
                        struct nsrv_tls_session *session) {
    e->crypto = crypto;
    e->tls = session;
}

unsigned nsrv__ce_feed_tls(nsrv_ce_t *e, const char *data, size_t n, uint64_t now_ns) {
    if (stopped(e))
        return 0;
    const nsrv_crypto_api_t *cr = e->crypto;
    nsrv_ce_host_t *h = e->host;
    bool was_up = cr->session_established(e->tls);
    nsrv_buf_t *plain = &h->tls_plain;
    nsrv_buf_reset(plain);
    const char *why = NULL;
    nsrv_tls_status_t st = cr->session_feed(e->tls, data, n, plain, &why);
    unsigned act = 0;
    if (!was_up && cr->session_established(e->tls)) {
        h->tls_handshakes_ok++;
        act |= NSRV_CE_ACT_TLS_UP;
    } else if (!was_up && st == NSRV_TLS_FAILED) {
        h->tls_handshakes_failed++;
    }
    tls_flush_output(e);
    if (plain->len > 0 && !stopped(e))
        act |= nsrv__ce_feed(e, (const uint8_t *)plain->data, plain->len, now_ns);
    if (stopped(e) || st == NSRV_TLS_OK)
        return act;
    begin(e);
    close_with(e, st == NSRV_TLS_CLOSED ? "peer sent close_notify" : why);
    return act | finish(e);
}
