/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Connection hygiene: what keeps the memory and sockets that clients can hold
 * bounded by configuration, whatever the clients do.
 *
 *  - Idle: a connection that made no progress for serverChannelMaxIdleTimeSeconds
 *    is closed, as Java's all-idle handler closes a channel that neither read
 *    nor completed a write in that time. Progress is a byte read or a byte of
 *    queued replies drained by the peer, so a peer that stopped reading is idle
 *    too, however much it still has queued: it is reset (RST), so the kernel
 *    drops the unsent bytes as well instead of keeping them for an orphan.
 *  - The connection limit (maxConnections, and what RLIMIT_NOFILE allows:
 *    conn_limit.c): past it a new connection is accepted and closed at once
 *    (accepting keeps the kernel backlog from filling and stalling the listener).
 *    An accept that fails all the same (descriptors used elsewhere) is counted
 *    and logged as such; libuv closes the waiting clients itself then.
 *  - totalOutputLimitBytes: when the replies queued across all connections pass
 *    it, the connection holding the most is reset, until under it. The one
 *    holding the most is the one least likely to be reading (each connection
 *    already stops being read at connOutputLimitBytes), and a healthy client's
 *    small queue is never the largest.
 *  - totalInputLimitBytes: the same for the buffers of partial requests (each
 *    up to maxFrameLength), so many clients sending large frames slowly cannot
 *    make the node hold maxConnections x maxFrameLength.
 *
 * Each limit hit is counted (status page, /metrics) and logged at most every
 * LOG_EVERY_MS with the count since the last line. Loop thread only.
 */
#include <inttypes.h>
#include "nsrv/alloc.h"
#include "nsrv/config.h"
#include "nsrv/log.h"
#include "server_int.h"

#define LOG_EVERY_MS 10000

static bool log_due(uint64_t *last_ms, uint64_t now) {
    if (*last_ms != 0 && now - *last_ms < LOG_EVERY_MS)
        return false;
    *last_ms = now;
    return true;
}

static void free_cb(uv_handle_t *h) {
    nsrv_free(h);
}

static void log_refused(nsrv_server_t *srv, size_t limit) {
    int max = srv->cfg->max_connections;
    if (max > 0 && (size_t)max == limit)
        nsrv_log_warn("SERVER",
                      "maxConnections=%d reached: %" PRIu64 " new connection(s) refused "
                      "(%" PRIu64 " in all)",
                      max, srv->refused_since_log, srv->conns_refused_total);
    else
        nsrv_log_warn("SERVER",
                      "connection limit %zu reached (RLIMIT_NOFILE %" PRIu64 " less %" PRIu64
                      " reserved): %" PRIu64 " new connection(s) refused (%" PRIu64 " in all)",
                      limit, srv->fd_limit, nsrv__fd_reserve(srv->fd_limit), srv->refused_since_log,
                      srv->conns_refused_total);
    srv->refused_since_log = 0;
}

void nsrv__conn_accept_or_refuse(nsrv_server_t *srv) {
    size_t limit = nsrv__conn_limit(srv);
    if (srv->n_conns < limit) {
        nsrv__conn_accept(srv);
        return;
    }
    uv_tcp_t *t = nsrv_malloc(sizeof *t);
    uv_tcp_init(&srv->loop, t);
    if (uv_accept((uv_stream_t *)&srv->listener, (uv_stream_t *)t) == 0) {
        srv->conns_refused_total++;
        srv->refused_since_log++;
        if (log_due(&srv->refused_logged_ms, nsrv_now_mono_ms()))
            log_refused(srv, limit);
    }
    uv_close((uv_handle_t *)t, free_cb);
}

void nsrv__conn_accept_failed(nsrv_server_t *srv, int status) {
    srv->accept_failed_total++;
    srv->accept_failed_since_log++;
    if (!log_due(&srv->accept_failed_logged_ms, nsrv_now_mono_ms()))
        return;
    nsrv_log_warn("SERVER", "accept failed: %s: %" PRIu64 " time(s) (%" PRIu64 " in all)",
                  uv_strerror(status), srv->accept_failed_since_log, srv->accept_failed_total);
    srv->accept_failed_since_log = 0;
}

/* Freed reply buffers and decoded big frames leave holes in the allocator's heaps; a
 * stuck client's megabytes, or a fleet's registrations, should not stay in the process's
 * footprint once they are gone. At most once a sweep (about 1 ms with a million topics). */
static void give_back_freed_memory(nsrv_server_t *srv) {
    if (!srv->trim_due)
        return;
    srv->trim_due = false;
    nsrv__heap_give_back();
}

static void idle_tick(nsrv_server_t *srv, nsrv_conn_t *c, uint64_t now_ms, uint64_t idle_ms) {
    srv->idle_sweep_visits_total++;
    unsigned act = nsrv__ce_tick(&c->eng, now_ms, idle_ms,
                                 uv_stream_get_write_queue_size((uv_stream_t *)&c->tcp));
    if (!(act & NSRV_CE_ACT_CLOSE))
        return;
    if (act & NSRV_CE_ACT_STALLED) {
        srv->conns_stalled_total++;
        nsrv_log_notice(
            "SERVER", "connection '%s' drained none of its %zu queued reply bytes in %d s", c->peer,
            c->eng.out_pending, srv->cfg->server_channel_max_idle_time_seconds);
        c->reset_on_close = true;
        srv->trim_due = true;
    }
    nsrv__conn_close(c, c->eng.close_why);
}

void nsrv__conn_idle_sweep(nsrv_server_t *srv, uint64_t now_ms) {
    give_back_freed_memory(srv); /* what the closes of the last sweep released */
    uint64_t idle_ms = (uint64_t)srv->cfg->server_channel_max_idle_time_seconds * 1000u;
    if (idle_ms == 0)
        return;
    /* Replies queued in the socket: their drain is watched every tick. */
    for (nsrv_conn_t *c = srv->out_list, *next; c; c = next) {
        next = c->out_next;
        if (!c->closing)
            idle_tick(srv, c, now_ms, idle_ms);
        if (c->closing || (c->eng.out_pending == 0 &&
                           uv_stream_get_write_queue_size((uv_stream_t *)&c->tcp) == 0))
            nsrv__conn_out_unlist(c);
    }
    /* Only a connection not read for the idle time can be idle (conn_lists.c). */
    for (nsrv_conn_t *c = srv->heard_head, *next; c && now_ms - c->heard_ms >= idle_ms; c = next) {
        next = c->heard_next;
        if (!c->closing)
            idle_tick(srv, c, now_ms, idle_ms);
    }
}

static size_t output_held(const nsrv_conn_t *c) {
    return c->eng.out_pending;
}

static size_t input_held(const nsrv_conn_t *c) {
    return c->in_counted;
}

/* What one of the two server-wide memory caps is called and counts per connection. */
typedef struct {
    const char *key;                      /* totalOutputLimitBytes or totalInputLimitBytes */
    const char *holding;                  /* what the reset connections held the most of */
    const char *reason;                   /* the close reason */
    size_t (*held)(const nsrv_conn_t *c); /* one connection's part of the total */
} mem_cap_t;

static const mem_cap_t OUTPUT_CAP = {"totalOutputLimitBytes", "the most queued replies",
                                     "totalOutputLimitBytes reached", output_held};
static const mem_cap_t INPUT_CAP = {"totalInputLimitBytes", "the largest partial request",
                                    "totalInputLimitBytes reached", input_held};

static nsrv_conn_t *holding_most(nsrv_server_t *srv, const mem_cap_t *cap) {
    nsrv_conn_t *worst = NULL;
    for (nsrv_conn_t *c = srv->conns; c; c = c->next)
        if (!c->closing && cap->held(c) > 0 && (!worst || cap->held(c) > cap->held(worst)))
            worst = c;
    return worst;
}

/* Resets the connection holding the most until *bytes is back under limit (closing uncounts a
 * connection's bytes), counting resets in *total; a warning at most once per log interval
 * (*logged_ms) says how many went since the last one (*since_log). */
static void shed_until_under(nsrv_server_t *srv, const mem_cap_t *cap, const size_t *bytes,
                             int64_t limit, uint64_t *total, uint64_t *since_log,
                             uint64_t *logged_ms) {
    nsrv_conn_t *worst;
    while (*bytes > (uint64_t)limit && (worst = holding_most(srv, cap)) != NULL) {
        (*total)++;
        (*since_log)++;
        if (log_due(logged_ms, nsrv_now_mono_ms())) {
            nsrv_log_warn(
                "SERVER",
                "%s=%" PRId64 " reached: %" PRIu64 " connection(s) holding %s reset (%" PRIu64
                " in all), latest '%s' with %zu bytes",
                cap->key, limit, *since_log, cap->holding, *total, worst->peer, cap->held(worst));
            *since_log = 0;
        }
        worst->reset_on_close = true;
        srv->trim_due = true;
        nsrv__conn_close(worst, cap->reason);
    }
}

void nsrv__conn_output_queued(nsrv_conn_t *c, size_t bytes) {
    nsrv_server_t *srv = c->srv;
    srv->out_queued_bytes += bytes;
    shed_until_under(srv, &OUTPUT_CAP, &srv->out_queued_bytes, srv->cfg->total_output_limit_bytes,
                     &srv->output_shed_total, &srv->shed_since_log, &srv->shed_logged_ms);
}

void nsrv__conn_input_changed(nsrv_conn_t *c) {
    nsrv_server_t *srv = c->srv;
    size_t now = c->closing ? 0 : c->eng.in.cap;
    srv->in_buffered_bytes = srv->in_buffered_bytes - c->in_counted + now;
    c->in_counted = now;
    /* The shedding loop's own first test, here: this runs after every read. */
    if (srv->in_buffered_bytes > (uint64_t)srv->cfg->total_input_limit_bytes)
        shed_until_under(srv, &INPUT_CAP, &srv->in_buffered_bytes,
                         srv->cfg->total_input_limit_bytes, &srv->input_shed_total,
                         &srv->in_shed_since_log, &srv->in_shed_logged_ms);
}

void nsrv__conn_output_done(nsrv_conn_t *c, size_t bytes) {
    if (!c->closing) /* a closing connection's bytes left the total at its close */
        c->srv->out_queued_bytes -= bytes;
}
