/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Links of the broker simulator: one TCP connection from one simulated
 * broker to one nameserver. Connects (and reconnects with exponential
 * backoff), writes REGISTER_BROKER / heartbeats / UNREGISTER_BROKER as a
 * 5.x broker does (proto/requests.md §2.4-§2.7, proto/peers.md §1), matches responses by opaque,
 * measures registration latency and fails requests that time out.
 * Loop thread only. Server bytes are untrusted: frames are size-checked by
 * nsrv_bsim_rx_t and decoded by the remoting codec; bad ones drop the link.
 */
#include <string.h>

#include "nsrv/alloc.h"
#include "nsrv/log.h"
#include "bsim_sim.h"

typedef struct {
    uv_write_t req;
    nsrv_bsim_link_t *link;
    nsrv_buf_t buf;
} write_req_t;

static void start_reading(nsrv_bsim_link_t *l);

static nsrv_bsim_t *sim_of(const nsrv_bsim_link_t *l) {
    return l->broker->sim;
}

static bool may_connect(const nsrv_bsim_link_t *l) {
    return nsrv__bsim_broker_wants_links(l->broker) && !l->cut && !l->cut_closed;
}

static void retry_cb(uv_timer_t *t) {
    nsrv_bsim_link_t *l = t->data;
    l->retry_armed = false;
    nsrv__bsim_link_connect(l);
}

void nsrv__bsim_link_init(nsrv_bsim_t *sim, nsrv_bsim_link_t *l, nsrv_bsim_broker_t *b,
                          uint32_t node) {
    memset(l, 0, sizeof(*l));
    l->broker = b;
    l->node = node;
    l->state = NSRV_BSIM_LINK_IDLE;
    l->backoff_ms = NSRV_BSIM_BACKOFF_MIN_MS;
    nsrv__bsim_rx_init(&l->rx, NSRV_FRAME_MAX_DEFAULT);
    uv_timer_init(&sim->loop, &l->retry_timer);
    l->retry_timer.data = l;
}

void nsrv__bsim_link_first_done(nsrv_bsim_link_t *l, bool ok) {
    if (l->first_done)
        return;
    l->first_done = true;
    nsrv_bsim_t *sim = sim_of(l);
    nsrv_bsim_stats_t *s = &sim->stats;
    s->first_done++;
    if (ok)
        s->first_ok++;
    if (s->first_done == s->first_total && !sim->first_reported) {
        sim->first_reported = true;
        s->first_round_us = (uv_hrtime() - sim->start_ns) / 1000u;
        char line[160];
        snprintf(line, sizeof(line), "ready ok=%llu failed=%llu elapsed_ms=%.3f",
                 (unsigned long long)s->first_ok, (unsigned long long)(s->first_done - s->first_ok),
                 (double)s->first_round_us / 1000.0);
        nsrv_log_notice("BSIM", "first registration round done: %llu of %llu ok in %.3f ms",
                        (unsigned long long)s->first_ok, (unsigned long long)s->first_total,
                        (double)s->first_round_us / 1000.0);
        nsrv__bsim_print_line(line);
    }
}

/* The outcome of a request that got no answer (timeout or lost link). */
static void fail_request(nsrv_bsim_link_t *l, const nsrv_bsim_pending_t *p, bool timed_out) {
    nsrv_bsim_stats_t *s = &sim_of(l)->stats;
    if (p->code == NSRV_REQ_REGISTER_BROKER) {
        if (timed_out)
            s->reg_timeout++;
        else
            s->reg_lost++;
        nsrv__bsim_link_first_done(l, false);
    } else if (p->code == NSRV_REQ_UNREGISTER_BROKER) {
        s->unreg_failed++;
        nsrv__bsim_broker_unreg_done(l->broker);
    }
}

static void close_cb(uv_handle_t *h) {
    nsrv_bsim_link_t *l = h->data;
    l->state = NSRV_BSIM_LINK_IDLE;
    nsrv__bsim_rx_reset(&l->rx);
    if (!may_connect(l) || l->retry_armed)
        return;
    nsrv_bsim_t *sim = sim_of(l);
    l->retry_armed = true;
    uv_timer_start(&l->retry_timer, retry_cb, l->backoff_ms, 0);
    l->backoff_ms = NSRV_MIN(l->backoff_ms * 2, sim->opts.reconnect_max_ms);
}

void nsrv__bsim_link_close(nsrv_bsim_link_t *l, const char *why) {
    if (l->state == NSRV_BSIM_LINK_IDLE || l->state == NSRV_BSIM_LINK_CLOSING)
        return;
    nsrv_bsim_t *sim = sim_of(l);
    if (l->state == NSRV_BSIM_LINK_UP) {
        sim->stats.disconnects++;
        uv_read_stop((uv_stream_t *)&l->tcp);
    }
    nsrv_log_info("BSIM", "'%s/%u' -> node %u: connection closed (%s)", l->broker->group->name,
                  l->broker->id, l->node, why);
    l->state = NSRV_BSIM_LINK_CLOSING;
    uv_close((uv_handle_t *)&l->tcp, close_cb);
    /* Last: failing an UNREGISTER may finish a stop, which closes the other
     * links of the broker; this one is already CLOSING. */
    while (l->n_pending) {
        nsrv_bsim_pending_t p = l->pending[--l->n_pending];
        fail_request(l, &p, false);
    }
}

static void connect_cb(uv_connect_t *req, int status) {
    nsrv_bsim_link_t *l = req->data;
    if (status == UV_ECANCELED || l->state != NSRV_BSIM_LINK_CONNECTING)
        return;
    nsrv_bsim_t *sim = sim_of(l);
    if (status < 0) {
        sim->stats.connect_failed++;
        nsrv__bsim_link_first_done(l, false);
        nsrv__bsim_link_close(l, uv_strerror(status));
        return;
    }
    l->state = NSRV_BSIM_LINK_UP;
    sim->stats.connects++;
    uv_tcp_nodelay(&l->tcp, 1);
    start_reading(l);
    if (l->state == NSRV_BSIM_LINK_UP && l->broker->state == NSRV_BSIM_BROKER_ACTIVE)
        nsrv__bsim_link_send_register(l);
}

void nsrv__bsim_link_connect(nsrv_bsim_link_t *l) {
    if (l->state != NSRV_BSIM_LINK_IDLE || l->retry_armed || !may_connect(l))
        return;
    nsrv_bsim_t *sim = sim_of(l);
    uv_tcp_init(&sim->loop, &l->tcp);
    l->tcp.data = l;
    l->connect_req.data = l;
    l->state = NSRV_BSIM_LINK_CONNECTING;
    int rc = uv_tcp_connect(&l->connect_req, &l->tcp,
                            (const struct sockaddr *)&sim->node_addr[l->node], connect_cb);
    if (rc < 0) {
        sim->stats.connect_failed++;
        nsrv_log_warn("BSIM", "connect to node %u failed: %s", l->node, uv_strerror(rc));
        nsrv__bsim_link_first_done(l, false);
        nsrv__bsim_link_close(l, uv_strerror(rc));
    }
}

bool nsrv__bsim_link_writable(const nsrv_bsim_link_t *l) {
    return l->state == NSRV_BSIM_LINK_UP && !l->cut && !l->cut_closed &&
           uv_stream_get_write_queue_size((const uv_stream_t *)&l->tcp) < NSRV_BSIM_WRITE_QUEUE_MAX;
}

static void write_cb(uv_write_t *req, int status) {
    write_req_t *w = req->data;
    nsrv_bsim_link_t *l = w->link;
    nsrv_buf_deinit(&w->buf);
    nsrv_free(w);
    if (status < 0 && status != UV_ECANCELED && l->state == NSRV_BSIM_LINK_UP)
        nsrv__bsim_link_close(l, uv_strerror(status));
}

/* Encodes and writes one request. A request that expects an answer gets a
 * pending slot (-EBUSY when none is free). */
static int link_send(nsrv_bsim_link_t *l, int32_t code, const nsrv_ext_field_t *ext, size_t n_ext,
                     const void *body, size_t body_len, bool oneway, uint64_t timeout_ms) {
    nsrv_bsim_t *sim = sim_of(l);
    if (!nsrv__bsim_link_writable(l))
        return -EAGAIN;
    if (!oneway && l->n_pending == NSRV_BSIM_PENDING_MAX)
        return -EBUSY;
    int32_t opaque = sim->next_opaque;
    sim->next_opaque = opaque == INT32_MAX ? 0 : opaque + 1;
    nsrv_cmd_t cmd;
    memset(&cmd, 0, sizeof(cmd));
    cmd.code = code;
    cmd.language = NSRV_LANG_JAVA;
    cmd.version = NSRV_MQ_CURRENT; /* a 5.3.3 broker */
    cmd.opaque = opaque;
    cmd.flag = oneway ? NSRV_FLAG_ONEWAY : 0;
    cmd.has_ext = true;
    cmd.ext = (nsrv_ext_field_t *)ext;
    cmd.n_ext = n_ext;
    cmd.body = body;
    cmd.body_len = body_len;
    cmd.ser_type = sim->opts.ser_type;

    write_req_t *w = nsrv_malloc(sizeof(*w));
    w->link = l;
    w->req.data = w;
    nsrv_buf_init(&w->buf);
    int rc = nsrv_cmd_encode(&w->buf, &cmd);
    if (rc < 0) {
        nsrv_buf_deinit(&w->buf);
        nsrv_free(w);
        return rc;
    }
    size_t len = w->buf.len;
    uv_buf_t ub = uv_buf_init(w->buf.data, (unsigned)len);
    uint64_t now = uv_hrtime();
    rc = uv_write(&w->req, (uv_stream_t *)&l->tcp, &ub, 1, write_cb);
    if (rc < 0) {
        nsrv_buf_deinit(&w->buf);
        nsrv_free(w);
        nsrv__bsim_link_close(l, uv_strerror(rc));
        return rc;
    }
    sim->stats.bytes_sent += len;
    if (!oneway) {
        nsrv_bsim_pending_t *p = &l->pending[l->n_pending++];
        p->opaque = opaque;
        p->code = code;
        p->sent_ns = now;
        p->deadline_ns = now + timeout_ms * 1000000ull;
    }
    return 0;
}

#define EXT(k, v) ((nsrv_ext_field_t){NSRV_STR_LIT(k), nsrv_str_c(v)})

void nsrv__bsim_link_send_register(nsrv_bsim_link_t *l) {
    nsrv_bsim_broker_t *b = l->broker;
    nsrv_bsim_group_t *g = b->group;
    const nsrv_bsim_opts_t *o = &b->sim->opts;
    char timeout[24];
    snprintf(timeout, sizeof(timeout), "%llu", (unsigned long long)o->hb_timeout_ms);
    /* RegisterBrokerRequestHeader as a 5.x broker fills it (proto/requests.md §2.5, proto/peers.md
     * §1.2). */
    nsrv_ext_field_t ext[10];
    size_t n = 0;
    ext[n++] = EXT("brokerAddr", b->addr);
    ext[n++] = EXT("brokerId", b->id_text);
    ext[n++] = EXT("brokerName", g->name);
    ext[n++] = EXT("clusterName", o->cluster);
    ext[n++] = EXT("haServerAddr", b->ha_addr);
    ext[n++] = EXT("enableActingMaster", o->acting_master ? "true" : "false");
    ext[n++] = EXT("compressed", o->compressed ? "true" : "false");
    ext[n++] = EXT("bodyCrc32", g->body_crc);
    if (o->hb_timeout_ms)
        ext[n++] = EXT("heartbeatTimeoutMillis", timeout);
    if (o->zone[0])
        ext[n++] = EXT("__ZONE_NAME", o->zone);
    int rc = link_send(l, NSRV_REQ_REGISTER_BROKER, ext, n, g->body.data, g->body.len, false,
                       o->req_timeout_ms);
    if (rc == 0)
        b->sim->stats.reg_sent++;
    else if (rc == -EBUSY || (rc == -EAGAIN && l->state == NSRV_BSIM_LINK_UP && !l->cut))
        b->sim->stats.reg_skipped++; /* the server is not keeping up */
}

void nsrv__bsim_link_send_heartbeat(nsrv_bsim_link_t *l) {
    nsrv_bsim_broker_t *b = l->broker;
    nsrv_bsim_group_t *g = b->group;
    const nsrv_bsim_opts_t *o = &b->sim->opts;
    char dv[128];
    nsrv_ext_field_t ext[4];
    size_t n = 0;
    int rc;
    if (o->heartbeat_code == NSRV_REQ_QUERY_DATA_VERSION) {
        /* The compatibleWithOldNameSrv heartbeat: oneway, DataVersion body (proto/peers.md §1.3).
         */
        int dv_len = snprintf(dv, sizeof(dv),
                              "{\"counter\":%lld,\"stateVersion\":%lld,"
                              "\"timestamp\":%lld}",
                              (long long)g->dv.counter, (long long)g->dv.state_version,
                              (long long)g->dv.timestamp);
        ext[n++] = EXT("brokerName", g->name);
        ext[n++] = EXT("brokerAddr", b->addr);
        ext[n++] = EXT("clusterName", o->cluster);
        ext[n++] = EXT("brokerId", b->id_text);
        rc = link_send(l, NSRV_REQ_QUERY_DATA_VERSION, ext, n, dv, (size_t)dv_len, true, 0);
    } else {
        ext[n++] = EXT("clusterName", o->cluster);
        ext[n++] = EXT("brokerAddr", b->addr);
        ext[n++] = EXT("brokerName", g->name);
        rc = link_send(l, NSRV_REQ_BROKER_HEARTBEAT, ext, n, NULL, 0, true, 0);
    }
    if (rc == 0)
        b->sim->stats.hb_sent++;
}

int nsrv__bsim_link_send_unregister(nsrv_bsim_link_t *l) {
    nsrv_bsim_broker_t *b = l->broker;
    const nsrv_bsim_opts_t *o = &b->sim->opts;
    nsrv_ext_field_t ext[4];
    size_t n = 0;
    ext[n++] = EXT("brokerName", b->group->name);
    ext[n++] = EXT("brokerAddr", b->addr);
    ext[n++] = EXT("clusterName", o->cluster);
    ext[n++] = EXT("brokerId", b->id_text);
    int rc = link_send(l, NSRV_REQ_UNREGISTER_BROKER, ext, n, NULL, 0, false,
                       NSRV_BSIM_UNREG_TIMEOUT_MS);
    if (rc == 0)
        b->sim->stats.unreg_sent++;
    return rc;
}

/* One whole response frame from the server. */
static int frame_cb(void *ctx, const uint8_t *frame, size_t len) {
    nsrv_bsim_link_t *l = ctx;
    nsrv_bsim_t *sim = sim_of(l);
    nsrv_cmd_t cmd;
    nsrv_arena_reset(&sim->arena);
    int rc = nsrv_cmd_decode(frame, len, &sim->arena, &cmd);
    if (rc < 0)
        return rc;
    if (!nsrv_cmd_is_response(&cmd))
        return 0; /* a nameserver request (e.g. 905) is not ours to answer here */
    size_t i = 0;
    while (i < l->n_pending && l->pending[i].opaque != cmd.opaque)
        i++;
    if (i == l->n_pending) {
        sim->stats.rx_unmatched++; /* an answer after its timeout */
        return 0;
    }
    nsrv_bsim_pending_t p = l->pending[i];
    l->pending[i] = l->pending[--l->n_pending];
    uint64_t lat_us = (uv_hrtime() - p.sent_ns) / 1000;
    if (p.code == NSRV_REQ_REGISTER_BROKER) {
        if (cmd.code == NSRV_RESP_SUCCESS) {
            sim->stats.reg_ok++;
            nsrv__bsim_hist_add(&sim->stats.reg_lat_us, lat_us);
            l->backoff_ms = NSRV_BSIM_BACKOFF_MIN_MS;
            nsrv__bsim_link_first_done(l, true);
        } else {
            sim->stats.reg_err++;
            nsrv_log_info("BSIM", "'%s/%u' -> node %u: REGISTER_BROKER code %d '%s'",
                          l->broker->group->name, l->broker->id, l->node, (int)cmd.code,
                          cmd.remark.ptr ? cmd.remark.ptr : "");
            nsrv__bsim_link_first_done(l, false);
        }
    } else if (p.code == NSRV_REQ_UNREGISTER_BROKER) {
        if (cmd.code == NSRV_RESP_SUCCESS)
            sim->stats.unreg_ok++;
        else
            sim->stats.unreg_failed++;
        nsrv__bsim_broker_unreg_done(l->broker);
    }
    /* Handling may have closed this link (a finished stop). */
    return l->state == NSRV_BSIM_LINK_UP ? 0 : -ECANCELED;
}

static void alloc_cb(uv_handle_t *h, size_t suggested, uv_buf_t *buf) {
    NSRV_UNUSED(suggested);
    nsrv_bsim_link_t *l = h->data;
    nsrv_bsim_t *sim = sim_of(l);
    /* One shared buffer: libuv calls read_cb before the next alloc_cb, and
     * nsrv_bsim_rx_t copies whatever it must keep. */
    *buf = uv_buf_init(sim->read_buf, sizeof(sim->read_buf));
}

static void read_cb(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf) {
    nsrv_bsim_link_t *l = s->data;
    if (nread > 0) {
        int rc = nsrv__bsim_rx_feed(&l->rx, (const uint8_t *)buf->base, (size_t)nread, frame_cb, l);
        if (rc < 0 && rc != -ECANCELED) {
            sim_of(l)->stats.rx_errors++;
            nsrv__bsim_link_close(l, nsrv_strerror(rc));
        }
    } else if (nread < 0) {
        nsrv__bsim_link_close(l, nread == UV_EOF ? "closed by the nameserver"
                                                 : uv_strerror((int)nread));
    }
}

static void start_reading(nsrv_bsim_link_t *l) {
    int rc = uv_read_start((uv_stream_t *)&l->tcp, alloc_cb, read_cb);
    if (rc < 0)
        nsrv__bsim_link_close(l, uv_strerror(rc));
}

void nsrv__bsim_link_sweep(nsrv_bsim_link_t *l, uint64_t now_ns) {
    size_t i = 0;
    while (i < l->n_pending) {
        if (l->pending[i].deadline_ns > now_ns) {
            i++;
            continue;
        }
        nsrv_bsim_pending_t p = l->pending[i];
        l->pending[i] = l->pending[--l->n_pending];
        /* May close the link and empty the table; the loop bound rechecks. */
        fail_request(l, &p, true);
    }
}
