/* SPDX-License-Identifier: Apache-2.0 */
/*
 * One client or broker connection: reads frames, runs each request on the
 * loop thread, batches the replies of one read into one write, and applies
 * back-pressure: while more than connOutputLimitBytes of replies are queued,
 * the connection is neither read nor processed, so a client that never reads
 * cannot make the server buffer without bound.
 *
 * Fairness: one read batch runs at most BATCH_MAX_FRAMES requests or
 * BATCH_MAX_NS of loop time; then the connection stops reading and yields to
 * the others until the next loop turn (srv->resume), so a pipelining client
 * cannot hold everyone else's replies.
 *
 * Deferred replies: a request whose reply waits on a durable write reserves a
 * slot in the connection's reply queue; the replies to later requests wait
 * behind it (in order, never overtaking it) and go out when it is filled.
 */
#include <string.h>
#include <sys/ioctl.h>

#include "nsrv/alloc.h"
#include "nsrv/config.h"
#include "nsrv/log.h"
#include "nsrv/mq_version.h"
#include "nsrv/netaddr.h"
#include "nsrv/processor.h"
#include "nsrv/route.h"
#include "server_int.h"
#include "sock_write.h"

/* Read-buffer headroom offered to libuv per read. */
#define READ_CHUNK (64 * 1024)
/* Replies batched from one read are flushed once they pass this size. */
#define OUT_FLUSH_BYTES (256 * 1024)
/* The most loop time one connection's batch may take before others get their turn. A
 * route query takes microseconds, so a turn is hundreds of them. */
#define BATCH_MAX_NS (1000 * 1000)
#define BATCH_MAX_FRAMES 256
/* A batch runs at least this many requests whatever they cost, so a connection of slow
 * requests (big topic lists, or any under a sanitizer) still moves at a useful pace and
 * fills its output queue, which is what back-pressure watches. */
#define BATCH_MIN_FRAMES 16
/* Deferred replies one connection may have waiting; then it is not read until one is sent. */
#define MAX_SLOTS_PER_CONN 4096
/* Frames from this size on have the loop-thread CPU they take recorded (/metrics). */
#define BIG_FRAME_MEASURE_BYTES (64 * 1024)
/* A REGISTER_BROKER body from this size on is decoded on a worker whatever the frame's size
 * (with the worker on): a compressed body of 10,000 topics is ~40 KiB and inflates to ~1 MiB
 * of JSON text, milliseconds of decode. Its header, decoded on the loop to see the code, is
 * small. */
#define REGISTER_BODY_WORKER_BYTES (4 * 1024)

typedef struct {
    uv_write_t req;
    nsrv_conn_t *conn;
    size_t len;
    char data[];
} write_req_t;

static void conn_process(nsrv_conn_t *c);

static size_t out_limit(const nsrv_conn_t *c) {
    return (size_t)c->srv->cfg->conn_output_limit_bytes;
}

/* Reply bytes the connection holds: handed to libuv, or waiting behind a deferred reply. */
static size_t out_held(const nsrv_conn_t *c) {
    return c->out_pending + c->held_bytes;
}

/* Too much queued for its peer, or a frame of it on a worker: neither read nor process it. */
static bool conn_blocked(const nsrv_conn_t *c) {
    return out_held(c) > out_limit(c) || c->n_slots >= MAX_SLOTS_PER_CONN || c->job;
}

static void slot_free(nsrv_reply_slot_t *s) {
    nsrv_buf_deinit(&s->reply);
    nsrv_buf_deinit(&s->after);
    nsrv_free(s);
}

/* On close: sent-never replies are dropped; a slot still waiting for its write
 * is orphaned, and freed when the write reports. */
static void drop_slots(nsrv_conn_t *c) {
    for (nsrv_reply_slot_t *s = c->slots, *next; s; s = next) {
        next = s->next;
        if (s->filled) {
            slot_free(s);
        } else {
            s->conn = NULL;
            s->next = NULL;
            nsrv_buf_deinit(&s->after);
        }
    }
    c->slots = c->slots_tail = NULL;
    c->n_slots = 0;
    c->held_bytes = 0;
}

static void close_cb(uv_handle_t *h) {
    nsrv_conn_t *c = (nsrv_conn_t *)h;
    nsrv_server_t *srv = c->srv;
    NSRV_DLIST_UNLINK(srv->conns, c, prev, next);
    srv->n_conns--;
    nsrv_buf_deinit(&c->in);
    nsrv__conn_tls_free(c);
    nsrv_free(c);
    if (srv->shutting_down && srv->n_conns == 0)
        uv_stop(&srv->loop); /* server.c finishes the shutdown once uv_run returns */
}

void nsrv__conn_close(nsrv_conn_t *c, const char *why) {
    if (c->closing)
        return;
    /* close_notify only after every reply: after dropped ones it would claim a clean end. */
    if (c->tls && !c->reset_on_close && c->out_pending == 0)
        nsrv__conn_tls_close_notify(c);
    c->closing = true;
    nsrv__offload_orphan(c);
    nsrv_server_t *srv = c->srv;
    srv->out_queued_bytes -= c->out_pending; /* the close drops them */
    nsrv__conn_input_changed(c);             /* and its input buffer */
    HASH_DEL(srv->conn_by_id, c);
    /* Connections we close while shutting down say nothing about the brokers: keep
     * their routes so requests still draining on other connections see the same table. */
    size_t dropped =
        srv->shutting_down ? 0 : nsrv_route_conn_closed(srv->rt, c->id, nsrv_now_mono_ms());
    if (dropped)
        nsrv_log_notice("SERVER", "connection '%s' closed (%s): %zu broker(s) unregistered",
                        c->peer, why, dropped);
    else
        nsrv_log_info("SERVER", "connection '%s' closed (%s)", c->peer, why);
    drop_slots(c);
    uv_read_stop((uv_stream_t *)&c->tcp);
    if (!c->reset_on_close || uv_tcp_close_reset(&c->tcp, close_cb) != 0)
        uv_close((uv_handle_t *)&c->tcp, close_cb);
}

static void set_reading(nsrv_conn_t *c, bool on);

/* After output drained or a deferred reply went out: process what is buffered, read again. */
static void conn_resume(nsrv_conn_t *c) {
    if (c->closing || c->in_batch)
        return;
    /* Resume at half the limit so a slow reader is not toggled on every write. */
    if (out_held(c) <= out_limit(c) / 2 && c->n_slots < MAX_SLOTS_PER_CONN) {
        conn_process(c);
        if (!c->closing && !conn_blocked(c) && !c->yielded && !c->srv->shutting_down)
            set_reading(c, true);
    }
    if (!c->closing && c->srv->shutting_down)
        nsrv__conn_maybe_finish(c);
}

static void write_cb(uv_write_t *req, int status) {
    write_req_t *w = (write_req_t *)req;
    nsrv_conn_t *c = w->conn;
    c->out_pending -= w->len;
    nsrv__conn_output_done(c, w->len);
    nsrv_free(w);
    if (c->closing)
        return;
    if (status < 0) {
        nsrv__conn_close(c, uv_strerror(status));
        return;
    }
    c->last_active_ms = nsrv_now_mono_ms();
    conn_resume(c);
}

/* Copies iov's bytes from offset skip on into dst. */
static void copy_iov_from(const uv_buf_t *iov, unsigned n, size_t skip, char *dst) {
    for (unsigned i = 0; i < n; i++) {
        if (skip >= iov[i].len) {
            skip -= iov[i].len;
            continue;
        }
        memcpy(dst, iov[i].base + skip, iov[i].len - skip);
        dst += iov[i].len - skip;
        skip = 0;
    }
}

/*
 * Sends what it can at once with one scatter/gather write; queues the rest
 * with a copy owned by the write request. The copy is only made when the
 * socket is full, so the usual reply goes from the cached body to the kernel
 * without passing through an output buffer.
 */
static void conn_send_iov(nsrv_conn_t *c, const uv_buf_t *iov, unsigned n_iov, size_t len) {
    if (c->closing || len == 0)
        return;
    c->srv->reqm.bytes_out += len;
    size_t off = 0;
    if (c->out_pending == 0) {
        int n = nsrv__sock_try_write(&c->tcp, iov, n_iov);
        if (n > 0)
            off = (size_t)n;
        else if (n < 0 && n != UV_EAGAIN) {
            nsrv__conn_close(c, uv_strerror(n));
            return;
        }
    }
    if (off == len) {
        if (!c->in_batch) /* a batch stamps its own writes (process_frames) */
            c->last_active_ms = nsrv_now_mono_ms();
        return;
    }
    size_t rest = len - off;
    write_req_t *w = nsrv_malloc(sizeof *w + rest);
    w->conn = c;
    w->len = rest;
    copy_iov_from(iov, n_iov, off, w->data);
    uv_buf_t buf = uv_buf_init(w->data, (unsigned)rest);
    int rc = uv_write(&w->req, (uv_stream_t *)&c->tcp, &buf, 1, write_cb);
    if (rc < 0) {
        nsrv_free(w);
        nsrv__conn_close(c, uv_strerror(rc));
        return;
    }
    c->out_pending += rest;
    nsrv__conn_output_queued(c, rest);
}

/* Sends bytes the caller owns, unencrypted (the TLS session sends its records through it). */
void nsrv__conn_send_raw(nsrv_conn_t *c, const char *data, size_t len) {
    uv_buf_t b = uv_buf_init((char *)data, (unsigned)len);
    conn_send_iov(c, &b, 1, len);
}

/* Sends reply bytes, through the connection's TLS session if it has one. */
static void conn_send(nsrv_conn_t *c, const char *data, size_t len) {
    if (c->closing || len == 0)
        return;
    if (c->tls)
        nsrv__conn_tls_send(c, data, len);
    else
        nsrv__conn_send_raw(c, data, len);
}

/* Sends the batch's replies and empties it, dropping its body references. Plain
 * connections write it with one scatter/gather call. */
static void flush_out(nsrv_conn_t *c) {
    nsrv_out_batch_t *out = &c->srv->out;
    uv_buf_t iov[NSRV_OUT_MAX_SEGS];
    unsigned n_iov = nsrv__out_iov(out, iov);
    if (c->tls) {
        /* One plaintext run, so the session writes full records rather than one per piece. */
        nsrv_buf_t flat = NSRV_BUF_INIT;
        nsrv_buf_reserve(&flat, out->total);
        for (unsigned i = 0; i < n_iov; i++)
            nsrv_buf_append(&flat, iov[i].base, iov[i].len);
        conn_send(c, flat.data, flat.len);
        nsrv_buf_deinit(&flat);
    } else {
        conn_send_iov(c, iov, n_iov, out->total);
    }
    nsrv__out_reset(out);
}

/* Appends a reply: to srv->out (sent at the end of the batch), or behind the
 * connection's last deferred reply while one waits. head: its bytes up to the body, already
 * encoded (the route query's fast path), or NULL; behind a deferred reply the whole reply is
 * encoded into the slot's queue as any other. */
static void append_reply(nsrv_conn_t *c, const nsrv_cmd_t *resp, const void *head,
                         size_t head_len) {
    if (!c->slots_tail) {
        if (!nsrv__out_add_head(&c->srv->out, resp, head, head_len)) {
            flush_out(c);
            nsrv__out_add_head(&c->srv->out, resp, head, head_len);
        }
        return;
    }
    nsrv_buf_t *after = &c->slots_tail->after;
    size_t before = after->len;
    nsrv_cmd_encode(after, resp);
    c->held_bytes += after->len - before;
}

/* Counts a request as its turn starts (the generic and the fast path alike); returns its
 * metrics slot. */
static int request_started(nsrv_conn_t *c, int32_t code) {
    nsrv_server_t *srv = c->srv;
    srv->requests_total++;
    int slot = nsrv__mreq_slot(code);
    nsrv__metrics_request(&srv->reqm, slot);
    /* While shutting down every request is served, and the connection closed once drained.
     * No GO_AWAY: a 5.3.x client answers it by reconnecting to the same address, whose
     * listener is closed by now, and that request fails (cluster-tests/chaos/README.md). */
    if (srv->shutting_down)
        c->served_in_shutdown = true;
    return slot;
}

/* Queues a request's reply (head as append_reply) and records its latency; returns when
 * it ended. */
static uint64_t request_replied(nsrv_conn_t *c, int slot, const nsrv_cmd_t *resp, const void *head,
                                size_t head_len, uint64_t start_ns) {
    append_reply(c, resp, head, head_len);
    uint64_t end_ns = nsrv_now_mono_ns();
    nsrv__metrics_reply(&c->srv->reqm, slot, true, resp->code, start_ns, end_ns);
    return end_ns;
}

/*
 * Runs one decoded request and appends its reply (if any and not deferred).
 * start_ns is when the request's turn began (the read, or the end of the
 * previous request of the batch); returns when it ended. One clock reading per
 * request then serves its latency, the next request's start and the batch
 * budget (a reading costs as much as the rest of a cached route reply's work).
 */
static uint64_t run_request(nsrv_conn_t *c, const nsrv_cmd_t *req, nsrv_proc_prep_t *prep,
                            uint64_t start_ns) {
    nsrv_server_t *srv = c->srv;
    if (req->flag & NSRV_FLAG_RESPONSE)
        return start_ns; /* nsrvd sends no requests that expect answers */
    bool oneway = (req->flag & NSRV_FLAG_ONEWAY) != 0;
    int slot = request_started(c, req->code);
    nsrv_cmd_t resp;
    /* A reply slot reserved by the handler takes these; its latency ends at the fill. */
    srv->cur_metrics_slot = slot;
    srv->cur_start_ns = start_ns;
    bool deferred = nsrv_processor_handle_prepared(
        srv->proc, req, prep, c->id, c->has_peer_addr ? &c->peer_addr.sa : NULL,
        nsrv_mono_ns_to_ms(start_ns), &srv->arena, &srv->body, &resp);
    if (deferred)
        return nsrv_now_mono_ns();
    if (!oneway)
        return request_replied(c, slot, &resp, NULL, 0, start_ns);
    uint64_t end_ns = nsrv_now_mono_ns();
    nsrv__metrics_reply(&srv->reqm, slot, false, 0, start_ns, end_ns);
    return end_ns;
}

/*
 * A route query of the common shape answered without the generic decode
 * (nsrv_processor_route_fast: the same reply as the handler's), counted and
 * queued exactly as run_request does it. Returns false, having done nothing,
 * for any other frame. *now_ns: the request's start in, its end out.
 */
static bool run_route_fast(nsrv_conn_t *c, const uint8_t *frame, size_t frame_len,
                           uint64_t *now_ns) {
    nsrv_server_t *srv = c->srv;
    nsrv_route_fast_reply_t r;
    if (!nsrv_processor_route_fast(srv->proc, frame, frame_len, nsrv_mono_ns_to_ms(*now_ns), &r))
        return false;
    srv->route_fast_total++;
    int slot = request_started(c, NSRV_REQ_GET_ROUTEINFO_BY_TOPIC);
    *now_ns = request_replied(c, slot, &r.resp, r.head, r.head_len, *now_ns);
    return true;
}

void nsrv__conn_run_request(nsrv_conn_t *c, const nsrv_cmd_t *req, nsrv_proc_prep_t *prep) {
    run_request(c, req, prep, nsrv_now_mono_ns());
}

void nsrv__conn_flush(nsrv_conn_t *c) {
    flush_out(c);
}

/*
 * Runs every whole frame in p[0..avail) while the connection is open, under
 * its output limit and within its batch budget. Returns the bytes consumed;
 * what is left is a partial frame, or frames held back by back-pressure or
 * for the next loop turn (c->yielded).
 */
static size_t process_frames(nsrv_conn_t *c, const uint8_t *p, size_t avail) {
    nsrv_server_t *srv = c->srv;
    size_t max_frame = (size_t)srv->cfg->max_frame_length;
    size_t offload_min = nsrv__offload_min_bytes(srv);
    size_t used = 0;
    unsigned frames = 0;
    uint64_t start_ns = srv->read_ns ? srv->read_ns : nsrv_now_mono_ns();
    uint64_t now_ns = start_ns;
    c->in_batch = true;
    while (!c->closing && !conn_blocked(c)) {
        size_t frame_len = 0;
        int rc = nsrv_frame_peek(p + used, avail - used, max_frame, &frame_len);
        if (rc == NSRV_AGAIN)
            break;
        if (rc == 0 && frames >= BATCH_MIN_FRAMES &&
            (frames >= BATCH_MAX_FRAMES || now_ns - start_ns >= BATCH_MAX_NS)) {
            c->yielded = true; /* a whole frame waits: it runs on the next loop turn */
            srv->batch_yields_total++;
            break;
        }
        if (rc < 0) {
            srv->bad_frames_total++;
            nsrv__conn_close(c, "bad frame length");
            break;
        }
        if (offload_min > 0 && frame_len >= offload_min) {
            c->big_frame_len = frame_len; /* conn_process hands it to a worker */
            break;
        }
        if (run_route_fast(c, p + used, frame_len, &now_ns)) {
            used += frame_len;
            frames++;
            if (srv->out.total >= OUT_FLUSH_BYTES)
                flush_out(c);
            continue;
        }
        bool big = frame_len >= BIG_FRAME_MEASURE_BYTES;
        uint64_t cpu0 = big ? nsrv__thread_cpu_ns() : 0;
        nsrv_arena_reset(&srv->arena);
        nsrv_cmd_t req;
        rc = nsrv_cmd_decode(p + used, frame_len, &srv->arena, &req);
        if (rc < 0) {
            srv->bad_frames_total++;
            nsrv_log_info("SERVER", "closing '%s': %s", c->peer, nsrv_strerror(rc));
            nsrv__conn_close(c, nsrv_strerror(rc));
            break;
        }
        used += frame_len;
        frames++;
        bool big_body = req.code == NSRV_REQ_REGISTER_BROKER &&
                        req.body_len >= REGISTER_BODY_WORKER_BYTES &&
                        !(req.flag & NSRV_FLAG_RESPONSE);
        if (big_body && offload_min > 0) {
            nsrv__offload_start_copy(c, p + used - frame_len, frame_len);
            break; /* the connection waits for the job (conn_blocked) */
        }
        if (big_body && !big) {
            big = true;
            cpu0 = nsrv__thread_cpu_ns();
        }
        now_ns = run_request(c, &req, NULL, now_ns);
        if (big)
            nsrv__big_frame_cpu(srv, nsrv__thread_cpu_ns() - cpu0);
        if (srv->out.total >= OUT_FLUSH_BYTES)
            flush_out(c);
    }
    /* The batch's replies go out now: the last request's end stands for their write time. */
    if (frames)
        c->last_active_ms = nsrv_mono_ns_to_ms(now_ns);
    flush_out(c);
    c->in_batch = false;
    if (!c->closing && c->yielded && c->reading)
        c->yield_paused_reading = true; /* resume_cb turns reading back on */
    if (!c->closing && (conn_blocked(c) || c->yielded))
        set_reading(c, false);
    if (!c->closing && c->yielded)
        uv_idle_start(&srv->resume, nsrv__conn_resume_cb);
    return used;
}

/* Keeps unprocessed bytes in the connection's own buffer, sized for the whole
 * frame when its length is known so the rest is read straight into place. */
static void keep_rest(nsrv_conn_t *c, const uint8_t *p, size_t n) {
    size_t frame_len = 0;
    nsrv_buf_append(&c->in, p, n);
    if (nsrv_frame_peek(p, n, (size_t)c->srv->cfg->max_frame_length, &frame_len) == NSRV_AGAIN &&
        frame_len > n)
        nsrv_buf_reserve(&c->in, frame_len - n);
}

/* Processes what the connection's own buffer holds (a partial frame that has
 * grown, or frames held back by back-pressure), and frees the buffer once it
 * is empty so idle connections cost no buffer memory. */
static void conn_process(nsrv_conn_t *c) {
    size_t avail = c->in.len - c->in_off;
    if (avail == 0)
        return;
    c->in_off += process_frames(c, (const uint8_t *)c->in.data + c->in_off, avail);
    if (c->closing)
        return;
    if (c->big_frame_len) {
        nsrv__offload_start(c);
        set_reading(c, false); /* until the job has run (nsrv__conn_continue) */
        return;
    }
    if (c->in_off == c->in.len) {
        c->in_off = 0;
        nsrv_buf_deinit(&c->in);
        nsrv__conn_input_changed(c);
    } else if (c->in_off > c->in.cap / 2) {
        memmove(c->in.data, c->in.data + c->in_off, c->in.len - c->in_off);
        c->in.len -= c->in_off;
        c->in_off = 0;
    }
}

void nsrv__conn_deliver(nsrv_conn_t *c, const uint8_t *p, size_t n) {
    if (c->in.len != c->in_off) { /* behind a partial frame or held-back frames */
        nsrv_buf_append(&c->in, p, n);
        conn_process(c);
        return;
    }
    size_t used = process_frames(c, p, n);
    if (!c->closing && used < n)
        keep_rest(c, p + used, n - used);
    if (!c->closing && c->big_frame_len) {
        c->big_frame_len = 0;
        conn_process(c); /* finds the frame again, now in the connection's own buffer */
    }
}

void nsrv__conn_continue(nsrv_conn_t *c) {
    if (c->closing)
        return;
    /*
     * Not now: the big request just run (and the freeing of its multi-megabyte buffers)
     * took this loop turn's share; what the connection holds next runs as a yielded batch
     * on the next turn, after other connections' ready input. Reading was on when the job
     * paused it, so the resume turns it back on (in shutdown too).
     */
    c->yielded = true;
    c->yield_paused_reading = true;
    uv_idle_start(&c->srv->resume, nsrv__conn_resume_cb);
}

/*
 * Most reads carry whole requests: they land in one server-wide buffer and are
 * processed from there, with no per-connection memory. Only a partial frame
 * (or back-pressure) makes a connection keep bytes of its own, and then reads
 * go straight into that buffer until it drains.
 */
static void alloc_cb(uv_handle_t *h, size_t suggested, uv_buf_t *buf) {
    (void)suggested;
    nsrv_conn_t *c = (nsrv_conn_t *)h;
    /* A TLS connection's reads are ciphertext: they always land in the shared buffer. */
    if (c->tls || c->in.len == c->in_off) {
        *buf = uv_buf_init(c->srv->read_buf, sizeof c->srv->read_buf);
        return;
    }
    nsrv_buf_reserve(&c->in, READ_CHUNK);
    /* Keep one byte for the buffer's trailing NUL. At most a chunk a read even when a big
     * frame's buffer has room for more: libuv reads up to 32 times a turn while reads fill
     * the buffer, and one read of megabytes (copy and page faults) would hold the loop. */
    size_t room = c->in.cap - c->in.len - 1;
    *buf = uv_buf_init(c->in.data + c->in.len, (unsigned)(room < READ_CHUNK ? room : READ_CHUNK));
}

static void read_cb(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf) {
    nsrv_conn_t *c = (nsrv_conn_t *)s;
    if (nread == 0 || c->closing)
        return;
    if (nread < 0) {
        nsrv__conn_close(c, nread == UV_EOF ? "peer closed" : uv_strerror((int)nread));
        return;
    }
    nsrv_server_t *srv = c->srv;
    srv->read_ns = nsrv_now_mono_ns();
    c->last_active_ms = nsrv_mono_ns_to_ms(srv->read_ns);
    srv->reqm.bytes_in += (uint64_t)nread;
    if (!c->saw_first_byte) {
        c->saw_first_byte = true;
        if (!nsrv__conn_first_byte(c, (uint8_t)buf->base[0])) {
            srv->read_ns = 0;
            return;
        }
    }
    if (c->tls) {
        nsrv__conn_tls_received(c, buf->base, (size_t)nread);
    } else if (buf->base == srv->read_buf) {
        nsrv__conn_deliver(c, (const uint8_t *)buf->base, (size_t)nread);
    } else {
        c->in.len += (size_t)nread;
        conn_process(c);
    }
    srv->read_ns = 0; /* batches run from elsewhere (resume, write_cb) read the clock */
    if (!c->closing)
        nsrv__conn_input_changed(c);
    if (!c->closing && srv->shutting_down)
        nsrv__conn_maybe_finish(c);
}

static void set_reading(nsrv_conn_t *c, bool on) {
    if (c->closing || c->reading == on)
        return;
    c->reading = on;
    if (on)
        uv_read_start((uv_stream_t *)&c->tcp, alloc_cb, read_cb);
    else
        uv_read_stop((uv_stream_t *)&c->tcp);
}

void nsrv__conn_accept(nsrv_server_t *srv) {
    nsrv_conn_t *c = nsrv_calloc(1, sizeof *c);
    uv_tcp_init(&srv->loop, &c->tcp);
    if (uv_accept((uv_stream_t *)&srv->listener, (uv_stream_t *)&c->tcp) != 0) {
        uv_close((uv_handle_t *)&c->tcp, (uv_close_cb)nsrv_free);
        return;
    }
    c->srv = srv;
    c->id = ++srv->next_conn_id;
    srv->reqm.conns_accepted++;
    nsrv_buf_init(&c->in);
    c->last_active_ms = nsrv_now_mono_ms();
    uv_tcp_nodelay(&c->tcp, 1);
    struct sockaddr_storage ss;
    int len = sizeof ss;
    strcpy(c->peer, "?");
    if (uv_tcp_getpeername(&c->tcp, (struct sockaddr *)&ss, &len) == 0) {
        nsrv_sockaddr_format((const struct sockaddr *)&ss, c->peer, sizeof c->peer);
        if (ss.ss_family == AF_INET || ss.ss_family == AF_INET6) {
            memcpy(&c->peer_addr, &ss,
                   ss.ss_family == AF_INET ? sizeof c->peer_addr.in4 : sizeof c->peer_addr.in6);
            c->has_peer_addr = true;
        }
    }
    c->next = srv->conns;
    if (srv->conns)
        srv->conns->prev = c;
    srv->conns = c;
    srv->n_conns++;
    HASH_ADD(hh, srv->conn_by_id, id, sizeof c->id, c);
    set_reading(c, true);
}

void nsrv__conn_maybe_finish(nsrv_conn_t *c) {
    /* A deferred reply (a durable write in progress) is a request still in flight. */
    if (c->closing || c->job || c->out_pending > 0 || c->slots || c->in_off != c->in.len ||
        nsrv__conn_tls_input_pending(c))
        return;
    /* Idle since the signal: wait for its next request or the grace (server.c). */
    if (!c->served_in_shutdown && !c->srv->idle_grace_over)
        return;
    /* Bytes still in the kernel are a request in flight: read them first. */
    uv_os_fd_t fd;
    int unread = 0;
    if (uv_fileno((uv_handle_t *)&c->tcp, &fd) == 0 && ioctl(fd, FIONREAD, &unread) == 0 &&
        unread > 0)
        return;
    nsrv__conn_close(c, "shutting down");
}

/* Closes connections whose broker expired. Deferred because expiry runs inside
 * route-table calls, which must not be re-entered by a close. */
static void deferred_cb(uv_idle_t *h) {
    nsrv_server_t *srv = h->data;
    uv_idle_stop(h);
    for (nsrv_conn_t *c = srv->conns, *next; c; c = next) {
        next = c->next;
        if (c->deferred_close && !c->closing)
            nsrv__conn_close(c, "broker expired");
    }
}

void nsrv__conn_defer_close(nsrv_server_t *srv, uint64_t conn_id) {
    nsrv_conn_t *c = NULL;
    HASH_FIND(hh, srv->conn_by_id, &conn_id, sizeof conn_id, c);
    if (!c || c->closing)
        return;
    c->deferred_close = true;
    uv_idle_start(&srv->deferred, deferred_cb);
}

void nsrv__conn_resume_cb(uv_idle_t *h) {
    nsrv_server_t *srv = h->data;
    uv_idle_stop(h);
    for (nsrv_conn_t *c = srv->conns; c; c = c->next) {
        if (!c->yielded || c->closing)
            continue;
        c->yielded = false;
        conn_process(c);
        if (c->closing || c->yielded)
            continue; /* yielded again: still paused */
        /* Restore what the yield paused. While shutting down, a connection that
         * back-pressure had stopped stays stopped, as write_cb leaves it. */
        if (!conn_blocked(c) && (c->yield_paused_reading || !srv->shutting_down))
            set_reading(c, true);
        c->yield_paused_reading = false;
        if (!c->closing && srv->shutting_down)
            nsrv__conn_maybe_finish(c);
    }
}

nsrv_reply_slot_t *nsrv__conn_reply_reserve(nsrv_server_t *srv, uint64_t conn_id) {
    nsrv_conn_t *c = NULL;
    HASH_FIND(hh, srv->conn_by_id, &conn_id, sizeof conn_id, c);
    if (!c || c->closing)
        return NULL;
    nsrv_reply_slot_t *s = nsrv_calloc(1, sizeof *s);
    s->conn = c;
    s->metrics_slot = srv->cur_metrics_slot;
    s->start_ns = srv->cur_start_ns;
    nsrv_buf_init(&s->reply);
    nsrv_buf_init(&s->after);
    if (c->slots_tail)
        c->slots_tail->next = s;
    else
        c->slots = s;
    c->slots_tail = s;
    c->n_slots++;
    srv->replies_pending++;
    return s;
}

void nsrv__conn_reply_fill(nsrv_server_t *srv, nsrv_reply_slot_t *slot, const nsrv_cmd_t *resp) {
    srv->replies_pending--;
    nsrv__metrics_reply(&srv->reqm, slot->metrics_slot, resp != NULL, resp ? resp->code : 0,
                        slot->start_ns, nsrv_now_mono_ns());
    nsrv_conn_t *c = slot->conn;
    if (!c) {
        slot_free(slot);
        return;
    }
    nsrv_cmd_encode(&slot->reply, resp);
    slot->filled = true;
    c->held_bytes += slot->reply.len;
    /* Send every filled slot at the head, with the replies held behind each. */
    while (c->slots && c->slots->filled && !c->closing) {
        nsrv_reply_slot_t *s = c->slots;
        c->slots = s->next;
        if (!c->slots)
            c->slots_tail = NULL;
        c->n_slots--;
        c->held_bytes -= s->reply.len + s->after.len;
        conn_send(c, s->reply.data, s->reply.len);
        conn_send(c, s->after.data, s->after.len);
        slot_free(s);
    }
    conn_resume(c);
}
