/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The HTTP status endpoint (statusAddress:statusPort): GET /health, /ready, /status
 * (JSON: node, route table, every live broker and where its liveness comes
 * from, gossip peers), /metrics (Prometheus text, metrics.c), / (the cluster
 * page, cluster_page.html) and /rocketmq/<subgroup> (address service, nsaddr.c). One request per
 * connection; the reply is written and the connection closed. Loop thread.
 *
 * Probes must get through while others hold connections open: a connection
 * has STATUS_REQUEST_MS to send a complete request and STATUS_REPLY_MS in all
 * to take the reply, and when every slot is taken a new connection evicts the
 * oldest one that is still waiting for its request with nothing unread in the
 * kernel (a probe whose request has arrived is never the one evicted).
 */
#include <inttypes.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "nsrv/alloc.h"
#include "nsrv/config.h"
#include "nsrv/gossip.h"
#include "nsrv/gossip_node.h"
#include "nsrv/http.h"
#include "nsrv/json.h"
#include "nsrv/log.h"
#include "nsrv/netaddr.h"
#include "nsrv/route.h"
#include "nsrv/text.h"
#include "nsrv/writer.h"
#include "metrics.h"
#include "nsaddr.h"
#include "server_int.h"

/* Enough for monitoring; past it the oldest silent connection makes room. */
#define STATUS_MAX_CONNS 32
/* A complete request within this time of the accept... */
#define STATUS_REQUEST_MS 2000
/* ...and the reply taken within this one, or the connection is closed. */
#define STATUS_REPLY_MS 10000
#define STATUS_SWEEP_MS 250

/* cluster_page.html, embedded at build time (embed.cmake). */
extern const char nsrv_cluster_page[];
extern const size_t nsrv_cluster_page_len;

typedef struct status_conn {
    uv_tcp_t tcp;
    nsrv_server_t *srv;
    struct status_conn *prev, *next; /* srv->status_list, newest first */
    uint64_t accepted_ms;
    char in[NSRV_HTTP_MAX_REQUEST];
    size_t len;
    bool done;
} status_conn_t;

typedef struct {
    uv_write_t req;
    status_conn_t *conn;
    char *data;
} status_write_t;

static void status_close_cb(uv_handle_t *h) {
    nsrv_free(h);
}

/* Frees the slot at once; the memory goes when libuv is done with the handle. */
static void status_close(status_conn_t *c) {
    if (uv_is_closing((uv_handle_t *)&c->tcp))
        return;
    nsrv_server_t *srv = c->srv;
    NSRV_DLIST_UNLINK(srv->status_list, c, prev, next);
    srv->status_conns--;
    uv_close((uv_handle_t *)&c->tcp, status_close_cb);
}

static void status_write_cb(uv_write_t *req, int status) {
    (void)status;
    status_write_t *w = (status_write_t *)req;
    status_close(w->conn);
    nsrv_free(w->data);
    nsrv_free(w);
}

/* extra: more header lines, each ending in CRLF, or "". */
static void respond_with(status_conn_t *c, int code, const char *reason, const char *ctype,
                         const char *extra, nsrv_buf_t *body) {
    nsrv_buf_t out = NSRV_BUF_INIT;
    nsrv_buf_printf(&out,
                    "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
                    "%sConnection: close\r\n\r\n",
                    code, reason, ctype, body ? body->len : 0, extra);
    if (body && body->len)
        nsrv_buf_append(&out, body->data, body->len);
    status_write_t *w = nsrv_calloc(1, sizeof *w);
    w->conn = c;
    size_t len;
    w->data = nsrv_buf_steal(&out, &len);
    uv_buf_t b = uv_buf_init(w->data, (unsigned)len);
    c->done = true;
    uv_read_stop((uv_stream_t *)&c->tcp);
    if (uv_write(&w->req, (uv_stream_t *)&c->tcp, &b, 1, status_write_cb) != 0) {
        nsrv_free(w->data);
        nsrv_free(w);
        status_close(c);
    }
}

static void respond(status_conn_t *c, int code, const char *reason, const char *ctype,
                    nsrv_buf_t *body) {
    respond_with(c, code, reason, ctype, "", body);
}

static void json_kv_str(nsrv_buf_t *b, const char *key, const char *val) {
    nsrv_buf_printf(b, "\"%s\":", key);
    if (val)
        nsrv_json_write_str(b, val, strlen(val), NSRV_JSON_ESC_DEFAULT);
    else
        nsrv_buf_append_c(b, "null");
}

typedef struct {
    nsrv_buf_t *out;
    uint64_t now;
    size_t n;
    nsrv_server_t *srv;
} broker_walk_t;

static void broker_json_cb(void *ud, const nsrv_route_live_info_t *li) {
    broker_walk_t *w = ud;
    nsrv_buf_t *b = w->out;
    if (w->n++)
        nsrv_buf_append_ch(b, ',');
    nsrv_buf_append_ch(b, '{');
    json_kv_str(b, "cluster", li->cluster);
    nsrv_buf_append_ch(b, ',');
    json_kv_str(b, "brokerName", li->broker_name);
    nsrv_buf_printf(b, ",\"brokerId\":%" PRId64 ",", li->broker_id);
    json_kv_str(b, "brokerAddr", li->broker_addr);
    nsrv_buf_append_ch(b, ',');
    const char *via =
        w->srv->liveness_source ? w->srv->liveness_source(w->srv->liveness_ud, li) : NULL;
    json_kv_str(b, "source", li->last_direct_ms ? "direct" : via ? via : "peer");
    if (li->last_direct_ms)
        nsrv_buf_printf(b, ",\"lastDirectAgeMs\":%" PRIu64, w->now - li->last_direct_ms);
    else
        nsrv_buf_append_c(b, ",\"lastDirectAgeMs\":null");
    nsrv_buf_printf(b,
                    ",\"lastSeenAgeMs\":%" PRIu64 ",\"timeoutMs\":%" PRId64
                    ",\"connected\":%s,\"dataVersion\":{\"counter\":%" PRId64
                    ",\"stateVersion\":%" PRId64 ",\"timestamp\":%" PRId64 "}}",
                    w->now >= li->last_seen_ms ? w->now - li->last_seen_ms : 0, li->timeout_ms,
                    li->conn_id ? "true" : "false", li->data_version.counter,
                    li->data_version.state_version, li->data_version.timestamp);
}

static void build_status(nsrv_server_t *srv, nsrv_buf_t *b) {
    uint64_t now = nsrv_now_mono_ms();
    nsrv_route_stats_t rs;
    nsrv_route_get_stats(srv->rt, &rs);
    nsrv_buf_printf(b,
                    "{\"node\":{\"version\":\"%s\",\"pid\":%d,\"uptimeMs\":%" PRIu64
                    ",\"listenPort\":%d,\"connections\":%zu,\"shuttingDown\":%s,"
                    "\"requestsTotal\":%" PRIu64 ",\"badFramesTotal\":%" PRIu64
                    ",\"outputQueuedBytes\":%zu,\"connectionsRefused\":%" PRIu64
                    ",\"connectionsStalled\":%" PRIu64 ",\"outputLimitResets\":%" PRIu64 "},",
                    NSRV_VERSION, (int)getpid(), now - srv->start_ms, srv->bound_port, srv->n_conns,
                    srv->shutting_down ? "true" : "false", srv->requests_total,
                    srv->conn_host.bad_frames_total, srv->out_queued_bytes,
                    srv->conns_refused_total, srv->conns_stalled_total, srv->output_shed_total);
    nsrv_buf_printf(b,
                    "\"route\":{\"brokers\":%zu,\"routeCacheHits\":%" PRIu64
                    ",\"routeCacheBuilds\":%" PRIu64 ",\"expirePasses\":%" PRIu64
                    ",\"brokersExpired\":%" PRIu64 "},\"brokers\":[",
                    nsrv_route_broker_count(srv->rt), rs.route_cache_hits, rs.route_cache_builds,
                    rs.expire_passes, rs.brokers_expired);
    broker_walk_t w = {b, now, 0, srv};
    nsrv_route_foreach_live(srv->rt, now, broker_json_cb, &w);
    nsrv_buf_append_c(b, "]");
    if (srv->gossip_status) {
        nsrv_buf_append_c(b, ",\"gossip\":");
        srv->gossip_status(srv->gossip_status_ud, b);
    }
    nsrv_buf_append_c(b, "}\n");
}

/* Readiness (GET /ready): serving, not draining, and with gossip either one pull from a peer
 * done (a starting node pulls everything from every peer at once, so it then holds the
 * cluster's view) or the start-up window over, so that a node whose peers are all down
 * still becomes ready and serves its own brokers. Appends the reason to why. */
bool nsrv__ready(nsrv_server_t *srv, nsrv_buf_t *why) {
    uint64_t up = nsrv_now_mono_ms() - srv->start_ms;
    if (srv->shutting_down) {
        nsrv_buf_append_c(why, "not ready: draining (shutting down)\n");
        return false;
    }
    if (!srv->listener_open) {
        nsrv_buf_append_c(why, "not ready: not listening yet\n");
        return false;
    }
    if (!srv->gossip) {
        nsrv_buf_append_c(why, "ready\n");
        return true;
    }
    if (nsrv_gossip_node_counters(nsrv_gossip_engine(srv->gossip))->pulls_ok > 0) {
        nsrv_buf_append_c(why, "ready: synced with a peer\n");
        return true;
    }
    if (up >= NSRV_READY_WINDOW_MS) {
        nsrv_buf_printf(why, "ready: no peer answered within the start-up window (%d s)\n",
                        NSRV_READY_WINDOW_MS / 1000);
        return true;
    }
    char left[NSRV_DURATION_TEXT_MAX];
    nsrv_buf_printf(why, "not ready: no pull from a peer yet (start-up window %d s, %s left)\n",
                    NSRV_READY_WINDOW_MS / 1000,
                    nsrv_fmt_duration_ms(NSRV_READY_WINDOW_MS - up, left, sizeof left));
    return false;
}

static bool path_is(const nsrv_http_req_t *r, const char *p) {
    return r->path_len == strlen(p) && memcmp(r->path, p, r->path_len) == 0;
}

static void handle(status_conn_t *c, const nsrv_http_req_t *r) {
    nsrv_server_t *srv = c->srv;
    nsrv_buf_t body = NSRV_BUF_INIT;
    if (!(r->method_len == 3 && memcmp(r->method, "GET", 3) == 0)) {
        nsrv_buf_append_c(&body, "only GET\n");
        respond(c, 405, "Method Not Allowed", "text/plain", &body);
    } else if (path_is(r, "/health")) {
        /* Refused gossip still answers 200: the node serves what brokers tell
         * it directly, and taking it out of rotation would turn a gossip
         * misconfiguration into an outage. The body says "degraded". */
        if (srv->shutting_down) {
            nsrv_buf_append_c(&body, "shutting down\n");
        } else if (srv->gossip_degraded) {
            nsrv_buf_append_c(&body, "degraded: ");
            size_t mark = body.len;
            if (srv->gossip_degraded(srv->gossip_status_ud, &body))
                nsrv_buf_append_c(&body, "\n");
            else {
                body.len = 0;
                nsrv_buf_append_c(&body, "ok\n");
            }
            (void)mark;
        } else {
            nsrv_buf_append_c(&body, "ok\n");
        }
        respond(c, srv->shutting_down ? 503 : 200,
                srv->shutting_down ? "Service Unavailable" : "OK", "text/plain", &body);
    } else if (path_is(r, "/ready")) {
        /* Unlike /health, meant to take a node out of rotation (or hold back what depends
         * on it) until it holds the cluster's view. */
        bool ok = nsrv__ready(srv, &body);
        respond(c, ok ? 200 : 503, ok ? "OK" : "Service Unavailable", "text/plain", &body);
    } else if (path_is(r, "/status")) {
        build_status(srv, &body);
        /* The cluster page of any node reads every node's /status (read-only, no cookies). */
        respond_with(c, 200, "OK", "application/json", "Access-Control-Allow-Origin: *\r\n", &body);
    } else if (path_is(r, "/")) {
        nsrv_buf_append(&body, nsrv_cluster_page, nsrv_cluster_page_len);
        respond_with(c, 200, "OK", "text/html; charset=utf-8", "Cache-Control: no-cache\r\n",
                     &body);
    } else if (nsrv__nsaddr_path(srv, r->path, r->path_len)) {
        nsrv__nsaddr_write(srv, &body);
        respond(c, 200, "OK", "text/plain", &body);
    } else if (path_is(r, "/metrics")) {
        nsrv__metrics_write(srv, &body);
        respond(c, 200, "OK", "text/plain; version=0.0.4", &body);
    } else {
        nsrv_buf_append_c(
            &body, "not found: try /, /health, /ready, /status, /metrics or /rocketmq/nsaddr\n");
        respond(c, 404, "Not Found", "text/plain", &body);
    }
    nsrv_buf_deinit(&body);
}

static void status_alloc_cb(uv_handle_t *h, size_t suggested, uv_buf_t *buf) {
    (void)suggested;
    status_conn_t *c = (status_conn_t *)h;
    *buf = uv_buf_init(c->in + c->len, (unsigned)(sizeof c->in - c->len));
}

static void status_read_cb(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf) {
    (void)buf;
    status_conn_t *c = (status_conn_t *)s;
    if (c->done)
        return;
    if (nread < 0) {
        status_close(c);
        return;
    }
    c->len += (size_t)nread;
    nsrv_http_req_t r;
    int rc = nsrv_http_parse_request(c->in, c->len, &r);
    if (rc == NSRV_AGAIN && c->len < sizeof c->in)
        return;
    if (rc != 0) {
        nsrv_buf_t body = NSRV_BUF_INIT;
        nsrv_buf_append_c(&body, "bad request\n");
        respond(c, 400, "Bad Request", "text/plain", &body);
        nsrv_buf_deinit(&body);
        return;
    }
    handle(c, &r);
}

static bool kernel_has_unread(status_conn_t *c) {
    uv_os_fd_t fd;
    int unread = 0;
    return uv_fileno((uv_handle_t *)&c->tcp, &fd) == 0 && ioctl(fd, FIONREAD, &unread) == 0 &&
           unread > 0;
}

/* The oldest connection still waiting for its request with nothing to read, or NULL. */
static status_conn_t *oldest_silent(nsrv_server_t *srv) {
    status_conn_t *found = NULL;
    for (status_conn_t *c = srv->status_list; c; c = c->next)
        if (!c->done && !kernel_has_unread(c))
            found = c;
    return found;
}

static void status_sweep_cb(uv_timer_t *t) {
    nsrv_server_t *srv = t->data;
    uint64_t now = nsrv_now_mono_ms();
    for (status_conn_t *c = srv->status_list, *next; c; c = next) {
        next = c->next;
        uint64_t age = now - c->accepted_ms;
        if (age >= (c->done ? STATUS_REPLY_MS : STATUS_REQUEST_MS)) {
            srv->status_timeouts_total++;
            status_close(c);
        }
    }
}

static void status_listener_cb(uv_stream_t *s, int status) {
    nsrv_server_t *srv = s->data;
    if (status < 0)
        return;
    status_conn_t *c = nsrv_calloc(1, sizeof *c);
    uv_tcp_init(&srv->loop, &c->tcp);
    if (uv_accept(s, (uv_stream_t *)&c->tcp) != 0) {
        uv_close((uv_handle_t *)&c->tcp, status_close_cb);
        return;
    }
    if (srv->status_conns >= STATUS_MAX_CONNS) {
        status_conn_t *victim = oldest_silent(srv);
        if (!victim) { /* every slot is answering a request: those end on their own */
            uv_close((uv_handle_t *)&c->tcp, status_close_cb);
            return;
        }
        srv->status_evicted_total++;
        status_close(victim);
    }
    c->srv = srv;
    c->accepted_ms = nsrv_now_mono_ms();
    NSRV_DLIST_PUSH(srv->status_list, c, prev, next);
    srv->status_conns++;
    uv_read_start((uv_stream_t *)&c->tcp, status_alloc_cb, status_read_cb);
}

int nsrv__status_start(nsrv_server_t *srv) {
    const nsrv_config_t *cfg = srv->cfg;
    if (cfg->status_port == 0)
        return 0;
    char err[256];
    if (nsrv__nsaddr_configure(srv, cfg, err, sizeof err) != 0) {
        nsrv_log_error("SERVER", "address service: %s", err);
        return UV_EINVAL;
    }
    struct sockaddr_storage addr;
    const char *host = cfg->status_address;
    int rc = nsrv_sockaddr_literal(host, cfg->status_port, &addr) == 0 ? 0 : UV_EINVAL;
    uv_tcp_init(&srv->loop, &srv->status_listener);
    srv->status_listener.data = srv;
    if (rc == 0)
        rc = uv_tcp_bind(&srv->status_listener, (const struct sockaddr *)&addr, 0);
    if (rc == 0)
        rc = uv_listen((uv_stream_t *)&srv->status_listener, 64, status_listener_cb);
    if (rc != 0) {
        nsrv_log_error("SERVER", "cannot listen for status on %s:%d: %s", host, cfg->status_port,
                       uv_strerror(rc));
        return rc;
    }
    srv->status_open = true;
    uv_timer_init(&srv->loop, &srv->status_timer);
    srv->status_timer.data = srv;
    uv_timer_start(&srv->status_timer, status_sweep_cb, STATUS_SWEEP_MS, STATUS_SWEEP_MS);
    nsrv_log_notice("SERVER", "status endpoint on http://%s:%d/status", host, cfg->status_port);
    return 0;
}
