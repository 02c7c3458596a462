/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Pull bytes over TCP (proto/gossip.md §7): the client connects, writes the
 * request the engine built and feeds the reply back to the engine; the
 * server reads one length-prefixed request, lets the engine check and
 * answer it, writes the answer and hangs up. When to pull, retry or give up
 * is the engine's decision (node_pull.c).
 */
#include <errno.h>
#include <string.h>

#include "nsrv/alloc.h"
#include "nsrv/buf.h"
#include "nsrv/common.h"
#include "nsrv/gossip_timing.h"
#include "nsrv/log.h"

#include "transport_int.h"

struct nsrv__pull_srv {
    uv_tcp_t tcp;
    nsrv_gossip_t *g;
    uint32_t id; /* the engine's (nsrv_gossip_node_pull_conn_open); 0 until admitted */
    nsrv_buf_t in;
    bool replied;
    nsrv__pull_srv_t *next;
};

struct nsrv__pull_cli {
    uv_tcp_t tcp;
    uv_connect_t connect;
    nsrv_gossip_t *g;
    uint8_t peer;
    uint32_t pull_id;
    nsrv_buf_t req;
    bool done;
    nsrv__pull_cli_t *next;
};

/* ---- server ---- */

static void srv_unlink(nsrv_gossip_t *g, nsrv__pull_srv_t *s) {
    for (nsrv__pull_srv_t **pp = &g->srvs; *pp; pp = &(*pp)->next) {
        if (*pp == s) {
            *pp = s->next;
            return;
        }
    }
}

/* A pull connection's handle is closed: its buffer and itself go, and g counts one handle
 * released (the last one after a stop frees g). */
static void pull_conn_free(nsrv_gossip_t *g, nsrv_buf_t *buf, void *conn) {
    nsrv_buf_deinit(buf);
    nsrv_free(conn);
    nsrv__gossip_handle_released(g);
}

static void srv_closed(uv_handle_t *h) {
    nsrv__pull_srv_t *s = (nsrv__pull_srv_t *)h;
    nsrv_gossip_node_pull_conn_closed(s->g->node, s->id);
    pull_conn_free(s->g, &s->in, s);
}

static void srv_close(nsrv__pull_srv_t *s) {
    if (uv_is_closing((uv_handle_t *)&s->tcp))
        return;
    srv_unlink(s->g, s);
    uv_close((uv_handle_t *)&s->tcp, srv_closed);
}

typedef struct {
    uv_write_t req;
    nsrv__pull_srv_t *s;
    char *data;
} srv_write_t;

/* The reply is written, or could not be: either way the connection is done. */
static void srv_write_cb(uv_write_t *req, int status) {
    srv_write_t *w = (srv_write_t *)req;
    nsrv__pull_srv_t *s = w->s;
    (void)status;
    nsrv_free(w->data);
    nsrv_free(w);
    srv_close(s);
}

static void srv_alloc_cb(uv_handle_t *h, size_t suggested, uv_buf_t *buf) {
    (void)suggested;
    nsrv__pull_srv_t *s = (nsrv__pull_srv_t *)h;
    nsrv_buf_reserve(&s->in, 16 * 1024);
    *buf = uv_buf_init(s->in.data + s->in.len, (unsigned)(s->in.cap - s->in.len - 1));
}

static void srv_read_cb(uv_stream_t *st, ssize_t nread, const uv_buf_t *buf) {
    (void)buf;
    nsrv__pull_srv_t *s = (nsrv__pull_srv_t *)st;
    if (nread < 0 || s->replied) {
        if (nread < 0)
            srv_close(s);
        return;
    }
    s->in.len += (size_t)nread;
    if (s->in.len < 4)
        return;
    uint32_t n = nsrv_load_be32(s->in.data);
    if (n > NSRV_GOSSIP_PULL_REQ_MAX || s->in.len > 4 + (size_t)n) {
        srv_close(s);
        return;
    }
    if (s->in.len < 4 + (size_t)n)
        return;
    struct sockaddr_storage from;
    int flen = sizeof from;
    uv_tcp_getpeername(&s->tcp, (struct sockaddr *)&from, &flen);
    nsrv_buf_t out = NSRV_BUF_INIT;
    int rc = nsrv_gossip_node_pull_conn_request(s->g->node, s->id, (const uint8_t *)s->in.data + 4,
                                                n, (const struct sockaddr *)&from,
                                                nsrv__gossip_mono(), nsrv_now_wall_ms(), &out);
    if (rc != 0) {
        /* Never answer what failed authentication: just hang up. */
        nsrv_log_debug("GOSSIP", "pull request refused: %s", nsrv_gossip_reason_name(rc));
        nsrv_buf_deinit(&out);
        srv_close(s);
        return;
    }
    s->replied = true;
    uv_read_stop(st);
    srv_write_t *w = nsrv_calloc(1, sizeof *w);
    w->s = s;
    size_t len;
    w->data = nsrv_buf_steal(&out, &len);
    uv_buf_t b = uv_buf_init(w->data, (unsigned)len);
    int err = uv_write(&w->req, st, &b, 1, srv_write_cb);
    if (err != 0)
        srv_write_cb(&w->req, err);
}

void nsrv__pull_listen_cb(uv_stream_t *l, int status) {
    nsrv_gossip_t *g = l->data;
    if (status < 0 || g->stopping)
        return;
    nsrv__pull_srv_t *s = nsrv_calloc(1, sizeof *s);
    uv_tcp_init(g->loop, &s->tcp);
    s->tcp.data = g;
    s->g = g;
    g->open_handles++;
    s->next = g->srvs;
    g->srvs = s;
    if (uv_accept(l, (uv_stream_t *)&s->tcp) != 0) {
        srv_close(s);
        return;
    }
    /* Whether it may stay, and which older one goes, is the engine's call. */
    struct sockaddr_storage from;
    int flen = sizeof from;
    bool known = uv_tcp_getpeername(&s->tcp, (struct sockaddr *)&from, &flen) == 0;
    s->id = nsrv_gossip_node_pull_conn_open(g->node, known ? (const struct sockaddr *)&from : NULL,
                                            nsrv__gossip_mono());
    if (s->id == 0)
        srv_close(s);
    else
        uv_read_start((uv_stream_t *)&s->tcp, srv_alloc_cb, srv_read_cb);
    nsrv__gossip_pump(g); /* an eviction, a lookup, and the timer for this one's deadline */
}

void nsrv__pull_srv_close(nsrv_gossip_t *g, uint32_t conn) {
    for (nsrv__pull_srv_t *s = g->srvs; s; s = s->next) {
        if (s->id == conn) {
            srv_close(s);
            return;
        }
    }
}

/* ---- client ---- */

static void cli_closed(uv_handle_t *h) {
    nsrv__pull_cli_t *c = (nsrv__pull_cli_t *)h;
    pull_conn_free(c->g, &c->req, c);
}

static void cli_unlink(nsrv_gossip_t *g, nsrv__pull_cli_t *c) {
    for (nsrv__pull_cli_t **pp = &g->clis; *pp; pp = &(*pp)->next) {
        if (*pp == c) {
            *pp = c->next;
            return;
        }
    }
}

/* Closes c; tells the engine the pull failed unless it ended otherwise. */
static void cli_finish(nsrv__pull_cli_t *c, bool failed) {
    if (c->done)
        return;
    c->done = true;
    nsrv_gossip_t *g = c->g;
    cli_unlink(g, c);
    uv_close((uv_handle_t *)&c->tcp, cli_closed);
    if (failed && !g->stopping) {
        nsrv_gossip_node_pull_failed(g->node, c->peer, c->pull_id, nsrv__gossip_mono());
        nsrv__gossip_pump(g);
    }
}

static void cli_alloc_cb(uv_handle_t *h, size_t suggested, uv_buf_t *buf) {
    (void)suggested;
    nsrv__pull_cli_t *c = (nsrv__pull_cli_t *)h;
    *buf = uv_buf_init(c->g->rbuf, sizeof c->g->rbuf);
}

static void cli_read_cb(uv_stream_t *st, ssize_t nread, const uv_buf_t *buf) {
    nsrv__pull_cli_t *c = (nsrv__pull_cli_t *)st;
    if (c->done || nread == 0)
        return;
    if (nread < 0) {
        nsrv_log_info("GOSSIP", "pull from node %u ended early: %s", c->peer,
                      uv_strerror((int)nread));
        cli_finish(c, true);
        return;
    }
    int rc = nsrv_gossip_node_pull_data(c->g->node, c->peer, c->pull_id, (const uint8_t *)buf->base,
                                        (size_t)nread, nsrv__gossip_mono());
    if (rc == NSRV_AGAIN)
        return;
    /* Complete, or refused (the engine has recorded the failure): hang up. */
    nsrv_gossip_t *g = c->g;
    cli_finish(c, false);
    nsrv__gossip_pump(g);
}

static void cli_write_cb(uv_write_t *req, int status) {
    nsrv__pull_cli_t *c = req->data;
    nsrv_free(req);
    if (status < 0)
        cli_finish(c, true);
}

static void cli_connect_cb(uv_connect_t *req, int status) {
    nsrv__pull_cli_t *c = req->data;
    if (c->done)
        return;
    if (status < 0) {
        nsrv_log_info("GOSSIP", "pull from node %u: cannot connect: %s", c->peer,
                      uv_strerror(status));
        cli_finish(c, true);
        return;
    }
    uv_write_t *w = nsrv_calloc(1, sizeof *w);
    w->data = c;
    uv_buf_t b = uv_buf_init(c->req.data, (unsigned)c->req.len);
    if (uv_write(w, (uv_stream_t *)&c->tcp, &b, 1, cli_write_cb) != 0) {
        nsrv_free(w);
        cli_finish(c, true);
        return;
    }
    uv_read_start((uv_stream_t *)&c->tcp, cli_alloc_cb, cli_read_cb);
}

void nsrv__pull_start(nsrv_gossip_t *g, uint8_t peer, uint32_t pull_id, const uint8_t *req,
                      size_t len) {
    nsrv_gossip_peer_t *p = nsrv_gossip_peers_find(g->peers, peer);
    nsrv__pull_cli_t *c = nsrv_calloc(1, sizeof *c);
    c->g = g;
    c->peer = peer;
    c->pull_id = pull_id;
    nsrv_buf_init(&c->req);
    nsrv_buf_append(&c->req, req, len);
    uv_tcp_init(g->loop, &c->tcp);
    c->tcp.data = g;
    g->open_handles++;
    c->next = g->clis;
    g->clis = c;
    c->connect.data = c;
    socklen_t alen;
    if (!p || !nsrv_gossip_peer_has_addr(p) ||
        uv_tcp_connect(&c->connect, &c->tcp, nsrv_gossip_peer_addr(p, &alen), cli_connect_cb) != 0)
        cli_finish(c, true);
}

void nsrv__pull_cancel(nsrv_gossip_t *g, uint8_t peer, uint32_t pull_id) {
    for (nsrv__pull_cli_t *c = g->clis; c; c = c->next) {
        if (c->peer == peer && c->pull_id == pull_id) {
            cli_finish(c, false);
            return;
        }
    }
}

void nsrv__pull_close_all(nsrv_gossip_t *g) {
    while (g->clis)
        cli_finish(g->clis, false);
    for (nsrv__pull_srv_t *s = g->srvs, *next; s; s = next) {
        next = s->next;
        srv_close(s);
    }
}
