/* SPDX-License-Identifier: Apache-2.0 */
/*
 * One client or broker connection, the libuv side: accepts, reads into the
 * shared buffer or the connection's own, writes replies (a direct writev first,
 * a queued uv_write for the rest), and carries out what the connection engine
 * (conn_engine.h) decides: every rule about batches, back-pressure, deferred
 * replies, big frames, idleness and shutdown is there, not here. This file also
 * runs a frame's request for the engine (nsrv__ce_run): the route query's fast
 * path, else the generic decode and the processor.
 */
#include <stddef.h>
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

typedef struct {
    uv_write_t req;
    nsrv_conn_t *conn;
    size_t len;
    char data[];
} write_req_t;

static nsrv_conn_t *conn_of(nsrv_ce_t *e) {
    return (nsrv_conn_t *)(void *)((char *)e - offsetof(nsrv_conn_t, eng));
}

static void close_cb(uv_handle_t *h) {
    nsrv_conn_t *c = (nsrv_conn_t *)h;
    nsrv_server_t *srv = c->srv;
    NSRV_DLIST_UNLINK(srv->conns, c, prev, next);
    nsrv__conn_lists_remove(c);
    srv->n_conns--;
    nsrv__ce_free(&c->eng);
    nsrv_free(c);
    if (srv->shutting_down && srv->n_conns == 0)
        uv_stop(&srv->loop); /* server.c finishes the shutdown once uv_run returns */
}

void nsrv__conn_close(nsrv_conn_t *c, const char *why) {
    if (c->closing)
        return;
    /* close_notify only after every reply: after dropped ones it would claim a clean end. */
    if (c->eng.tls && !c->eng.reset_on_close && c->eng.out_pending == 0)
        nsrv__conn_tls_close_notify(c);
    c->closing = true;
    nsrv__offload_orphan(c);
    nsrv_server_t *srv = c->srv;
    srv->out_queued_bytes -= c->eng.out_pending; /* the close drops them */
    nsrv__ce_closed(&c->eng);                    /* and the replies it held back */
    nsrv__conn_input_changed(c);                 /* and its input buffer */
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
    uv_read_stop((uv_stream_t *)&c->tcp);
    if (!c->eng.reset_on_close || uv_tcp_close_reset(&c->tcp, close_cb) != 0)
        uv_close((uv_handle_t *)&c->tcp, close_cb);
}

static void alloc_cb(uv_handle_t *h, size_t suggested, uv_buf_t *buf);
static void read_cb(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf);

/* Carries out what the engine returned (conn_engine.h, NSRV_CE_ACT_*); apply() is the
 * usual case, nothing, without a call. */
static void apply_actions(nsrv_conn_t *c, unsigned act) {
    if (c->closing)
        return;
    if (act & NSRV_CE_ACT_TLS_UP)
        nsrv__conn_tls_up(c);
    if (act & NSRV_CE_ACT_CLOSE) {
        nsrv__conn_close(c, c->eng.close_why);
        return;
    }
    if (act & NSRV_CE_ACT_OFFLOAD)
        nsrv__offload_start(c);
    if (act & NSRV_CE_ACT_INPUT)
        nsrv__conn_input_changed(c);
    if (c->closing)
        return;
    if (act & NSRV_CE_ACT_READ_ON)
        uv_read_start((uv_stream_t *)&c->tcp, alloc_cb, read_cb);
    else if (act & NSRV_CE_ACT_READ_OFF)
        uv_read_stop((uv_stream_t *)&c->tcp);
    if (act & NSRV_CE_ACT_YIELD) {
        nsrv__conn_yield_list(c);
        uv_idle_start(&c->srv->resume, nsrv__conn_resume_cb);
    }
    if (act & NSRV_CE_ACT_FINISH)
        nsrv__conn_maybe_finish(c);
}

static inline void apply(nsrv_conn_t *c, unsigned act) {
    if (act)
        apply_actions(c, act);
}

static void write_cb(uv_write_t *req, int status) {
    write_req_t *w = (write_req_t *)req;
    nsrv_conn_t *c = w->conn;
    nsrv__ce_write_done(&c->eng, w->len);
    nsrv__conn_output_done(c, w->len);
    nsrv_free(w);
    if (c->closing)
        return;
    if (status < 0) {
        nsrv__conn_close(c, uv_strerror(status));
        return;
    }
    apply(c, nsrv__ce_drained(&c->eng, nsrv_now_mono_ns()));
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
    if (c->eng.out_pending == 0) {
        int n = nsrv__sock_try_write(&c->tcp, iov, n_iov);
        if (n > 0)
            off = (size_t)n;
        else if (n < 0 && n != UV_EAGAIN) {
            nsrv__conn_close(c, uv_strerror(n));
            return;
        }
    }
    if (off == len) {
        if (!c->eng.in_batch) /* a batch stamps its own writes (conn_engine.c) */
            nsrv__ce_heard(&c->eng, nsrv_now_mono_ms());
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
    nsrv__ce_queued(&c->eng, rest);
    nsrv__conn_out_list(c);
    nsrv__conn_output_queued(c, rest);
}

/* The engine's send_raw hook: bytes the caller owns, as they are (a TLS session's records). */
void nsrv__ce_send_raw(void *ud, nsrv_ce_t *e, const char *data, size_t len) {
    (void)ud;
    uv_buf_t b = uv_buf_init((char *)data, (unsigned)len);
    conn_send_iov(conn_of(e), &b, 1, len);
}

/* The engine's transmit hook (a plaintext connection): sends the batch's replies with one
 * scatter/gather write and empties it, dropping its body references. */
void nsrv__ce_transmit(void *ud, nsrv_ce_t *e) {
    nsrv_server_t *srv = ud;
    nsrv_out_batch_t *out = &srv->out;
    struct iovec iov[NSRV_OUT_MAX_SEGS];
    unsigned n_iov = nsrv__out_iov(out, iov);
    conn_send_iov(conn_of(e), (const uv_buf_t *)iov, n_iov, out->total);
    nsrv__out_reset(out);
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
    nsrv__ce_request_started(&c->eng);
    return slot;
}

/* Queues a request's reply (head as nsrv__ce_reply) and records its latency; returns when
 * it ended. */
static uint64_t request_replied(nsrv_conn_t *c, int slot, const nsrv_cmd_t *resp, const void *head,
                                size_t head_len, uint64_t start_ns) {
    nsrv__ce_reply(&c->eng, resp, head, head_len);
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

/* The engine's run hook: one whole frame's request, on the loop thread. */
__attribute__((always_inline)) inline nsrv_ce_run_t nsrv__ce_run(void *ud, nsrv_ce_t *e,
                                                                 const uint8_t *frame,
                                                                 size_t frame_len, uint64_t *now_ns,
                                                                 const char **why) {
    nsrv_server_t *srv = ud;
    nsrv_conn_t *c = conn_of(e);
    if (run_route_fast(c, frame, frame_len, now_ns))
        return NSRV_CE_RAN;
    bool big = frame_len >= NSRV_CE_BIG_FRAME_MEASURE_BYTES;
    uint64_t cpu0 = big ? nsrv__thread_cpu_ns() : 0;
    nsrv_arena_reset(&srv->arena);
    nsrv_cmd_t req;
    int rc = nsrv_cmd_decode(frame, frame_len, &srv->arena, &req);
    if (rc < 0) {
        nsrv_log_info("SERVER", "closing '%s': %s", c->peer, nsrv_strerror(rc));
        *why = nsrv_strerror(rc);
        return NSRV_CE_BAD;
    }
    bool big_body = req.code == NSRV_REQ_REGISTER_BROKER &&
                    req.body_len >= NSRV_CE_REGISTER_BODY_WORKER_BYTES &&
                    !(req.flag & NSRV_FLAG_RESPONSE);
    if (big_body && srv->cfg->big_frame_worker_bytes > 0)
        return NSRV_CE_OFFLOAD_COPY;
    if (big_body && !big) {
        big = true;
        cpu0 = nsrv__thread_cpu_ns();
    }
    *now_ns = run_request(c, &req, NULL, *now_ns);
    if (big)
        nsrv__big_frame_cpu(srv, nsrv__thread_cpu_ns() - cpu0);
    return NSRV_CE_RAN;
}

void nsrv__conn_host_init(nsrv_server_t *srv) {
    srv->conn_host = (nsrv_ce_host_t){.cfg = srv->cfg, .out = &srv->out, .ud = srv};
}

void nsrv__conn_run_request(nsrv_conn_t *c, const nsrv_cmd_t *req, nsrv_proc_prep_t *prep) {
    run_request(c, req, prep, nsrv_now_mono_ns());
}

void nsrv__conn_flush(nsrv_conn_t *c) {
    apply(c, nsrv__ce_flush(&c->eng));
}

void nsrv__conn_continue(nsrv_conn_t *c) {
    if (c->closing)
        return;
    apply(c, nsrv__ce_job_done(&c->eng));
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
    size_t room = 0;
    /* A TLS connection's reads are ciphertext: they always land in the shared buffer. */
    char *own = c->eng.tls ? NULL : nsrv__ce_read_room(&c->eng, &room);
    if (!own) {
        *buf = uv_buf_init(c->srv->read_buf, sizeof c->srv->read_buf);
        return;
    }
    *buf = uv_buf_init(own, (unsigned)room);
}

/* After input was taken in (a read, or held input run): every such step may have grown the
 * connection's own buffer (a partial frame kept, a read landed or held in it), and in
 * shutdown may have been the last request: checked whatever the engine said (a TLS read
 * that yields no plaintext says nothing). */
static void apply_after_input(nsrv_conn_t *c, unsigned act) {
    act |= NSRV_CE_ACT_INPUT;
    if (c->srv->shutting_down)
        act |= NSRV_CE_ACT_FINISH;
    apply_actions(c, act);
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
    nsrv__ce_heard(&c->eng, nsrv_mono_ns_to_ms(srv->read_ns));
    nsrv__conn_heard(c, nsrv_mono_ns_to_ms(srv->read_ns));
    srv->reqm.bytes_in += (uint64_t)nread;
    if (!c->saw_first_byte) {
        c->saw_first_byte = true;
        if (!nsrv__conn_first_byte(c, (uint8_t)buf->base[0])) {
            srv->read_ns = 0;
            return;
        }
    }
    const uint8_t *p = (const uint8_t *)buf->base;
    bool shared = buf->base == srv->read_buf;
    unsigned act = 0;
    if (!c->eng.tls && shared && nsrv__ce_hold(&c->eng, p, (size_t)nread, srv->read_ns)) {
        nsrv__conn_held_list(c); /* runs after the quiet connections (conn_light_first.c) */
    } else {
        srv->light_read_ns = srv->read_ns;
        if (c->eng.tls)
            act = nsrv__ce_feed_tls(&c->eng, buf->base, (size_t)nread, srv->read_ns);
        else if (shared)
            act = nsrv__ce_feed(&c->eng, p, (size_t)nread, srv->read_ns);
        else
            act = nsrv__ce_feed_landed(&c->eng, (size_t)nread, srv->read_ns);
    }
    srv->read_ns = 0; /* batches run from elsewhere (resume, write_cb) read the clock */
    apply_after_input(c, act);
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
    nsrv__ce_init(&c->eng, &srv->conn_host, nsrv_now_mono_ms());
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
    nsrv__conn_lists_add(c, nsrv_now_mono_ms());
    srv->n_conns++;
    HASH_ADD(hh, srv->conn_by_id, id, sizeof c->id, c);
    uv_read_start((uv_stream_t *)&c->tcp, alloc_cb, read_cb); /* the engine starts reading */
}

void nsrv__conn_maybe_finish(nsrv_conn_t *c) {
    if (c->closing || !nsrv__ce_finished(&c->eng))
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

void nsrv__conn_run_held(nsrv_conn_t *c, uint64_t now_ns) {
    if (c->closing)
        return;
    apply_after_input(c, nsrv__ce_run_held(&c->eng, now_ns));
}

void nsrv__conn_resume_cb(uv_idle_t *h) {
    nsrv_server_t *srv = h->data;
    uv_idle_stop(h);
    /* Taken whole: a batch that yields again joins the list anew, for the next turn. No
     * connection is freed during the walk (uv_close's callback runs later). */
    nsrv_conn_t *list = srv->yield_list;
    srv->yield_list = NULL;
    for (nsrv_conn_t *c = list, *next; c; c = next) {
        next = c->yield_next;
        c->yield_listed = false;
        if (c->eng.yielded && !c->closing)
            apply(c, nsrv__ce_resume(&c->eng, nsrv_now_mono_ns()));
    }
}

nsrv_reply_slot_t *nsrv__conn_reply_reserve(nsrv_server_t *srv, uint64_t conn_id) {
    nsrv_conn_t *c = NULL;
    HASH_FIND(hh, srv->conn_by_id, &conn_id, sizeof conn_id, c);
    if (!c || c->closing)
        return NULL;
    return nsrv__ce_reserve(&c->eng, srv->cur_metrics_slot, srv->cur_start_ns);
}

void nsrv__conn_reply_fill(nsrv_server_t *srv, nsrv_reply_slot_t *slot, const nsrv_cmd_t *resp) {
    uint64_t now_ns = nsrv_now_mono_ns();
    nsrv__metrics_reply(&srv->reqm, slot->metrics_slot, resp != NULL, resp ? resp->code : 0,
                        slot->start_ns, now_ns);
    nsrv_ce_t *e = slot->eng;
    unsigned act = nsrv__ce_fill(slot, resp, now_ns);
    if (e)
        apply(conn_of(e), act);
}
