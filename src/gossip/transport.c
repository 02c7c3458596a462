/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Gossip I/O (include/nsrv/gossip.h): one UDP socket for digests, a TCP
 * listener that serves pulls and a TCP client that makes them, and the
 * timers that drive the engine. The only gossip file that touches libuv.
 * Untrusted input reaches the engine's checks before anything else; nothing
 * here answers a packet that failed them.
 */
#include "nsrv/gossip.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <uv.h>

#include "nsrv/alloc.h"
#include "nsrv/buf.h"
#include "nsrv/common.h"
#include "nsrv/config.h"
#include "nsrv/log.h"
#include "nsrv/netaddr.h"
#include "nsrv/seal.h"

/* SYNC_REQ is repeated this often until every peer's first digest arrived. */
#define SYNC_RETRY_MS 500
/* Keys that a digest made us want are batched this long before a pull. */
#define PULL_BATCH_MS 100
/* A pull (either side) that takes longer is abandoned (memberlist TCPTimeout). */
#define PULL_DEADLINE_MS 10000
/* Keys per pull request. */
#define PULL_KEYS_MAX 4096
/* A peer's clock anchor (a signed pull reply) is refreshed this often, so the
 * drift allowance added to it stays a few milliseconds (proto/gossip.md §7.6). */
#define ANCHOR_REFRESH_MS 60000
/* After a failed pull, a peer is not asked again for this long. */
#define PULL_RETRY_MS 1000
/* Jitter of the full-digest period, in percent either way. */
#define FULL_JITTER_PCT 10

typedef struct pull_srv pull_srv_t;
typedef struct pull_cli pull_cli_t;

struct nsrv_gossip {
    uv_loop_t *loop;
    nsrv_route_t *rt;
    nsrv_gossip_peers_t *peers;
    nsrv_gossip_node_t *node;
    uint8_t node_id;
    uint32_t interval_ms, delta_ms;
    uv_udp_t udp;
    uv_tcp_t tcp;
    uv_timer_t full_timer, delta_timer, sync_timer, pull_timer, sweep_timer;
    char rbuf[NSRV_GOSSIP_DGRAM_MAX];
    pull_srv_t *srvs;
    pull_cli_t *clis[256];
    uint64_t last_pull_ok[256];
    uint64_t last_pull_fail[256];
    int open_handles;
    bool stopping;
    uint8_t sk[NSRV_SEAL_SK_LEN];
};

struct pull_srv {
    uv_tcp_t tcp;
    nsrv_gossip_t *g;
    nsrv_buf_t in;
    uint64_t started;
    bool replied;
    pull_srv_t *next;
};

struct pull_cli {
    uv_tcp_t tcp;
    uv_connect_t connect;
    nsrv_gossip_t *g;
    uint8_t peer;
    bool all;
    uint8_t nonce[NSRV_GOSSIP_NONCE_LEN];
    uint64_t sent_at;
    nsrv_gossip_pull_dec_t *dec;
    nsrv_buf_t req;
    bool done;
};

static uint64_t mono(void) {
    return nsrv_now_mono_ms();
}

/* One handle of g is closed; the last one after a stop frees g. */
static void handle_released(nsrv_gossip_t *g) {
    if (--g->open_handles == 0 && g->stopping) {
        nsrv_gossip_node_destroy(&g->node);
        nsrv_gossip_peers_destroy(&g->peers);
        nsrv_seal_wipe(g->sk, sizeof g->sk);
        nsrv_free(g);
    }
}

static void handle_closed(uv_handle_t *h) {
    handle_released(h->data);
}

static void close_handle(uv_handle_t *h) {
    if (!uv_is_closing(h))
        uv_close(h, handle_closed);
}

/* ---- UDP ---- */

static void udp_send(void *ud, uint8_t dst, const uint8_t *d, size_t len) {
    nsrv_gossip_t *g = ud;
    nsrv_gossip_peer_t *p = nsrv_gossip_peers_find(g->peers, dst);
    if (!p || g->stopping)
        return;
    socklen_t alen;
    const struct sockaddr *to = nsrv_gossip_peer_addr(p, &alen);
    uv_buf_t b = uv_buf_init((char *)d, (unsigned)len);
    /* Datagrams are small and gossip tolerates loss: a full socket drops one. */
    int rc = uv_udp_try_send(&g->udp, &b, 1, to);
    if (rc < 0 && rc != UV_EAGAIN)
        nsrv_log_debug("GOSSIP", "send to node %u failed: %s", dst, uv_strerror(rc));
}

static void udp_alloc_cb(uv_handle_t *h, size_t suggested, uv_buf_t *buf) {
    (void)suggested;
    nsrv_gossip_t *g = h->data;
    *buf = uv_buf_init(g->rbuf, sizeof g->rbuf);
}

static void udp_recv_cb(uv_udp_t *u, ssize_t nread, const uv_buf_t *buf,
                        const struct sockaddr *from, unsigned flags) {
    nsrv_gossip_t *g = u->data;
    if (nread <= 0 || !from || g->stopping)
        return;
    if (flags & UV_UDP_PARTIAL)
        return; /* larger than any datagram we accept */
    int rc = nsrv_gossip_node_on_dgram(g->node, (const uint8_t *)buf->base, (size_t)nread, from,
                                       mono(), nsrv_now_wall_ms());
    if (rc != 0)
        nsrv_log_debug("GOSSIP", "datagram dropped: %s", nsrv_gossip_reason_name(rc));
}

/* ---- pull server ---- */

static void srv_unlink(nsrv_gossip_t *g, pull_srv_t *s) {
    for (pull_srv_t **pp = &g->srvs; *pp; pp = &(*pp)->next) {
        if (*pp == s) {
            *pp = s->next;
            return;
        }
    }
}

static void srv_closed(uv_handle_t *h) {
    pull_srv_t *s = (pull_srv_t *)h;
    nsrv_gossip_t *g = s->g;
    nsrv_buf_deinit(&s->in);
    nsrv_free(s);
    handle_released(g);
}

static void srv_close(pull_srv_t *s) {
    if (uv_is_closing((uv_handle_t *)&s->tcp))
        return;
    srv_unlink(s->g, s);
    uv_close((uv_handle_t *)&s->tcp, srv_closed);
}

typedef struct {
    uv_write_t req;
    pull_srv_t *s;
    char *data;
} srv_write_t;

static void srv_write_cb(uv_write_t *req, int status) {
    (void)status;
    srv_write_t *w = (srv_write_t *)req;
    srv_close(w->s);
    nsrv_free(w->data);
    nsrv_free(w);
}

static void srv_alloc_cb(uv_handle_t *h, size_t suggested, uv_buf_t *buf) {
    (void)suggested;
    pull_srv_t *s = (pull_srv_t *)h;
    nsrv_buf_reserve(&s->in, 16 * 1024);
    *buf = uv_buf_init(s->in.data + s->in.len, (unsigned)(s->in.cap - s->in.len - 1));
}

static void srv_read_cb(uv_stream_t *st, ssize_t nread, const uv_buf_t *buf) {
    (void)buf;
    pull_srv_t *s = (pull_srv_t *)st;
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
    int rc = nsrv_gossip_node_serve_pull(s->g->node, (const uint8_t *)s->in.data + 4, n,
                                         (const struct sockaddr *)&from, mono(), nsrv_now_wall_ms(),
                                         &out);
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
    if (uv_write(&w->req, st, &b, 1, srv_write_cb) != 0) {
        nsrv_free(w->data);
        nsrv_free(w);
        srv_close(s);
    }
}

static void tcp_listen_cb(uv_stream_t *l, int status) {
    nsrv_gossip_t *g = l->data;
    if (status < 0 || g->stopping)
        return;
    pull_srv_t *s = nsrv_calloc(1, sizeof *s);
    uv_tcp_init(g->loop, &s->tcp);
    s->tcp.data = g;
    s->g = g;
    s->started = mono();
    g->open_handles++;
    s->next = g->srvs;
    g->srvs = s;
    if (uv_accept(l, (uv_stream_t *)&s->tcp) != 0) {
        srv_close(s);
        return;
    }
    uv_read_start((uv_stream_t *)&s->tcp, srv_alloc_cb, srv_read_cb);
}

/* ---- pull client ---- */

static void cli_closed(uv_handle_t *h) {
    pull_cli_t *c = (pull_cli_t *)h;
    nsrv_gossip_t *g = c->g;
    nsrv_gossip_pull_dec_destroy(&c->dec);
    nsrv_buf_deinit(&c->req);
    nsrv_free(c);
    handle_released(g);
}

static void cli_finish(pull_cli_t *c, bool ok) {
    if (c->done)
        return;
    c->done = true;
    nsrv_gossip_t *g = c->g;
    if (g->clis[c->peer] == c)
        g->clis[c->peer] = NULL;
    if (!ok && !g->stopping) {
        nsrv_gossip_node_pull_failed(g->node, c->peer, c->all);
        g->last_pull_fail[c->peer] = mono();
    }
    uv_close((uv_handle_t *)&c->tcp, cli_closed);
}

static void cli_alloc_cb(uv_handle_t *h, size_t suggested, uv_buf_t *buf) {
    (void)suggested;
    pull_cli_t *c = (pull_cli_t *)h;
    *buf = uv_buf_init(c->g->rbuf, sizeof c->g->rbuf);
}

static void cli_read_cb(uv_stream_t *st, ssize_t nread, const uv_buf_t *buf) {
    pull_cli_t *c = (pull_cli_t *)st;
    if (c->done)
        return;
    if (nread < 0) {
        nsrv_log_info("GOSSIP", "pull from node %u ended early: %s", c->peer,
                      uv_strerror((int)nread));
        cli_finish(c, false);
        return;
    }
    int rc = nsrv_gossip_pull_dec_feed(c->dec, buf->base, (size_t)nread);
    if (rc == NSRV_AGAIN)
        return;
    if (rc != 0) {
        nsrv_log_warn("GOSSIP", "pull reply from node %u rejected: %s", c->peer,
                      rc <= NSRV_GOSSIP_ESIZE && rc >= NSRV_GOSSIP_ETYPE
                          ? nsrv_gossip_reason_name(rc)
                          : nsrv_strerror(rc));
        cli_finish(c, false);
        return;
    }
    const nsrv_gossip_pull_item_t *items;
    size_t count = nsrv_gossip_pull_dec_items(c->dec, &items);
    uint64_t src_inc = 0, src_mono = 0;
    nsrv_gossip_pull_dec_origin(c->dec, &src_inc, &src_mono);
    size_t imported = nsrv_gossip_node_apply_pull(c->g->node, c->peer, items, count, c->sent_at,
                                                  mono(), src_inc, src_mono);
    nsrv_log_info("GOSSIP", "pulled %zu broker(s) from node %u, %zu applied", count, c->peer,
                  imported);
    c->g->last_pull_ok[c->peer] = mono();
    cli_finish(c, true);
}

static void cli_write_cb(uv_write_t *req, int status) {
    pull_cli_t *c = req->data;
    nsrv_free(req);
    if (status < 0)
        cli_finish(c, false);
}

static void cli_connect_cb(uv_connect_t *req, int status) {
    pull_cli_t *c = req->data;
    if (c->done)
        return;
    if (status < 0) {
        nsrv_log_info("GOSSIP", "pull from node %u: cannot connect: %s", c->peer,
                      uv_strerror(status));
        cli_finish(c, false);
        return;
    }
    uv_write_t *w = nsrv_calloc(1, sizeof *w);
    w->data = c;
    uv_buf_t b = uv_buf_init(c->req.data, (unsigned)c->req.len);
    if (uv_write(w, (uv_stream_t *)&c->tcp, &b, 1, cli_write_cb) != 0) {
        nsrv_free(w);
        cli_finish(c, false);
        return;
    }
    uv_read_start((uv_stream_t *)&c->tcp, cli_alloc_cb, cli_read_cb);
}

static void start_pull(nsrv_gossip_t *g, nsrv_gossip_peer_t *p, const uint64_t *keys, size_t n,
                       bool all) {
    uint8_t pid = nsrv_gossip_peer_id(p);
    pull_cli_t *c = nsrv_calloc(1, sizeof *c);
    c->g = g;
    c->peer = pid;
    c->all = all;
    nsrv_seal_random(c->nonce, sizeof c->nonce);
    size_t nkeys;
    const nsrv_gossip_key_t *pk = nsrv_gossip_peer_keys(p, &nkeys);
    c->dec = nsrv_gossip_pull_dec_create(c->nonce, pk, nkeys);
    c->sent_at = mono();
    if (nsrv_gossip_node_pull_request(g->node, pid, all ? NULL : keys, all ? 0 : n, c->nonce,
                                      c->sent_at, nsrv_now_wall_ms(), &c->req) != 0) {
        nsrv_gossip_pull_dec_destroy(&c->dec);
        nsrv_buf_deinit(&c->req);
        nsrv_free(c);
        return;
    }
    uv_tcp_init(g->loop, &c->tcp);
    c->tcp.data = g;
    g->open_handles++;
    g->clis[pid] = c;
    c->connect.data = c;
    socklen_t alen;
    if (uv_tcp_connect(&c->connect, &c->tcp, nsrv_gossip_peer_addr(p, &alen), cli_connect_cb) != 0)
        cli_finish(c, false);
}

/* ---- timers ---- */

static uint64_t jittered(uint32_t ms) {
    uint32_t r;
    nsrv_seal_random(&r, sizeof r);
    uint32_t span = ms * FULL_JITTER_PCT / 100;
    return (uint64_t)ms - span + (span ? r % (2 * span + 1) : 0);
}

static void full_cb(uv_timer_t *t) {
    nsrv_gossip_t *g = t->data;
    nsrv_gossip_node_send_full(g->node, mono(), nsrv_now_wall_ms());
    uv_timer_start(t, full_cb, jittered(g->interval_ms), 0);
}

static void delta_cb(uv_timer_t *t) {
    nsrv_gossip_t *g = t->data;
    nsrv_gossip_node_send_delta(g->node, mono(), nsrv_now_wall_ms());
}

static void sync_cb(uv_timer_t *t) {
    nsrv_gossip_t *g = t->data;
    if (nsrv_gossip_node_send_sync(g->node, mono(), nsrv_now_wall_ms()) == 0)
        uv_timer_stop(t);
}

static void pull_cb(uv_timer_t *t) {
    nsrv_gossip_t *g = t->data;
    uint64_t keys[PULL_KEYS_MAX];
    for (size_t i = 0; i < nsrv_gossip_peers_count(g->peers); i++) {
        nsrv_gossip_peer_t *p = nsrv_gossip_peers_at(g->peers, i);
        uint8_t pid = nsrv_gossip_peer_id(p);
        if (g->clis[pid])
            continue; /* one pull per peer at a time */
        if (g->last_pull_fail[pid] && mono() - g->last_pull_fail[pid] < PULL_RETRY_MS)
            continue;
        bool all = false;
        size_t n = nsrv_gossip_node_take_pull(g->node, pid, keys, PULL_KEYS_MAX, &all, mono());
        if (all || n) {
            start_pull(g, p, keys, n, all);
        } else if (mono() - g->last_pull_ok[pid] > ANCHOR_REFRESH_MS) {
            /* Nothing to fetch, but the anchor ages: ask for one key no broker has. */
            keys[0] = 0;
            start_pull(g, p, keys, 1, false);
        }
    }
}

static void sweep_cb(uv_timer_t *t) {
    nsrv_gossip_t *g = t->data;
    uint64_t now = mono();
    for (pull_srv_t *s = g->srvs, *next; s; s = next) {
        next = s->next;
        if (now - s->started > PULL_DEADLINE_MS)
            srv_close(s);
    }
    for (int i = 0; i < 256; i++) {
        pull_cli_t *c = g->clis[i];
        if (c && now - c->sent_at > PULL_DEADLINE_MS) {
            nsrv_log_info("GOSSIP", "pull from node %d timed out", i);
            cli_finish(c, false);
        }
    }
}

/* ---- configuration ---- */

static int apply_config(nsrv_gossip_t *g, const nsrv_config_t *cfg, bool first, char *err,
                        size_t errlen) {
    nsrv_gossip_peer_list_t *list = nsrv_malloc(sizeof *list);
    int rc = nsrv_gossip_parse_peers(cfg->gossip_peers, cfg->gossip_peer_keys,
                                     (uint8_t)cfg->gossip_node_id, list, err, errlen);
    if (rc == 0 && (rc = nsrv_gossip_peers_configure(g->peers, list->confs, list->n)) != 0)
        snprintf(err, errlen, "gossipPeers/gossipPeerKeys rejected");
    nsrv_free(list);
    if (rc != 0)
        return rc;
    uint8_t pk[NSRV_SEAL_PK_LEN];
    rc = nsrv_seal_sk_load(cfg->gossip_secret_key_file, pk, g->sk);
    if (rc != 0) {
        snprintf(err, errlen, "gossipSecretKeyFile '%s': %s%s", cfg->gossip_secret_key_file,
                 strerror(-rc), rc == -EPERM ? " (must not be readable by group or others)" : "");
        return rc;
    }
    if (!first)
        nsrv_gossip_node_set_key(g->node, (uint8_t)cfg->gossip_key_id, g->sk);
    return 0;
}

int nsrv_gossip_reload(nsrv_gossip_t *g, const nsrv_config_t *cfg, char *err, size_t errlen) {
    return apply_config(g, cfg, false, err, errlen);
}

static int bind_both(nsrv_gossip_t *g, const nsrv_config_t *cfg, char *err, size_t errlen) {
    struct sockaddr_storage ss;
    const char *host = cfg->gossip_listen_address;
    int port = cfg->gossip_port;
    int rc = nsrv_sockaddr_literal(host, port, &ss) == 0 ? 0 : UV_EINVAL;
    if (rc == 0)
        rc = uv_udp_bind(&g->udp, (const struct sockaddr *)&ss, UV_UDP_REUSEADDR);
    if (rc == 0)
        rc = uv_udp_recv_start(&g->udp, udp_alloc_cb, udp_recv_cb);
    if (rc == 0)
        rc = uv_tcp_bind(&g->tcp, (const struct sockaddr *)&ss, 0);
    if (rc == 0)
        rc = uv_listen((uv_stream_t *)&g->tcp, 64, tcp_listen_cb);
    if (rc != 0)
        snprintf(err, errlen, "cannot bind gossip on %s:%d: %s", host, port, uv_strerror(rc));
    return rc;
}

static void init_timer(nsrv_gossip_t *g, uv_timer_t *t) {
    uv_timer_init(g->loop, t);
    t->data = g;
    g->open_handles++;
}

nsrv_gossip_t *nsrv_gossip_start(uv_loop_t *loop, const nsrv_config_t *cfg, nsrv_route_t *rt,
                                 char *err, size_t errlen) {
    if (cfg->gossip_node_id < NSRV_GOSSIP_NODE_MIN) {
        snprintf(err, errlen, "gossipNodeId must be set (1..254) when gossipEnable=true");
        return NULL;
    }
    if (nsrv_seal_init() != 0) {
        snprintf(err, errlen, "libsodium failed to initialize");
        return NULL;
    }
    nsrv_gossip_t *g = nsrv_calloc(1, sizeof *g);
    g->loop = loop;
    g->rt = rt;
    g->node_id = (uint8_t)cfg->gossip_node_id;
    g->interval_ms = (uint32_t)cfg->gossip_interval_ms;
    g->delta_ms = (uint32_t)cfg->gossip_delta_ms;
    g->peers = nsrv_gossip_peers_create((uint32_t)cfg->gossip_max_datagram);
    if (apply_config(g, cfg, true, err, errlen) != 0)
        goto fail;
    char state[4096];
    if (cfg->gossip_state_path[0])
        snprintf(state, sizeof state, "%s", cfg->gossip_state_path);
    else {
        const char *slash = strrchr(cfg->kv_config_path, '/');
        snprintf(state, sizeof state, "%.*sgossip.state",
                 slash ? (int)(slash - cfg->kv_config_path + 1) : 0, cfg->kv_config_path);
    }
    uint64_t inc = 0;
    int rc = nsrv_gossip_incarnation_next(state, nsrv_now_wall_ms(), &inc);
    if (rc != 0) {
        snprintf(err, errlen, "gossip state '%s': %s", state, strerror(-rc));
        goto fail;
    }
    nsrv_gossip_node_opts_t o = {
        .node_id = g->node_id,
        .cluster = cfg->gossip_cluster_name,
        .budget = (uint32_t)cfg->gossip_max_datagram,
        .incarnation = inc,
        .mono_start_ms = mono(),
        .key_id = (uint8_t)cfg->gossip_key_id,
        .sk = g->sk,
        .send = udp_send,
        .ud = g,
    };
    g->node = nsrv_gossip_node_create(&o, rt, g->peers);
    if (!g->node) {
        snprintf(err, errlen, "bad gossip settings (cluster name 1..64 bytes?)");
        goto fail;
    }
    uv_udp_init(loop, &g->udp);
    g->udp.data = g;
    g->open_handles++;
    uv_tcp_init(loop, &g->tcp);
    g->tcp.data = g;
    g->open_handles++;
    init_timer(g, &g->full_timer);
    init_timer(g, &g->delta_timer);
    init_timer(g, &g->sync_timer);
    init_timer(g, &g->pull_timer);
    init_timer(g, &g->sweep_timer);
    if (bind_both(g, cfg, err, errlen) != 0) {
        nsrv_gossip_stop(g);
        return NULL;
    }
    /* A (re)started node asks for observations and registrations at once. */
    for (size_t i = 0; i < nsrv_gossip_peers_count(g->peers); i++)
        nsrv_gossip_node_want_all(g->node, nsrv_gossip_peer_id(nsrv_gossip_peers_at(g->peers, i)));
    nsrv_gossip_node_send_sync(g->node, mono(), nsrv_now_wall_ms());
    uv_timer_start(&g->sync_timer, sync_cb, SYNC_RETRY_MS, SYNC_RETRY_MS);
    uv_timer_start(&g->full_timer, full_cb, jittered(g->interval_ms) / 5 + 1, 0);
    uv_timer_start(&g->delta_timer, delta_cb, g->delta_ms, g->delta_ms);
    uv_timer_start(&g->pull_timer, pull_cb, 0, PULL_BATCH_MS);
    uv_timer_start(&g->sweep_timer, sweep_cb, 1000, 1000);
    nsrv_log_notice("GOSSIP", "node %u of '%s' on %s:%d, incarnation %llu, %zu peer(s)", g->node_id,
                    cfg->gossip_cluster_name, cfg->gossip_listen_address, cfg->gossip_port,
                    (unsigned long long)inc, nsrv_gossip_peers_count(g->peers));
    return g;
fail:
    nsrv_gossip_peers_destroy(&g->peers);
    nsrv_seal_wipe(g->sk, sizeof g->sk);
    nsrv_free(g);
    return NULL;
}

void nsrv_gossip_stop(nsrv_gossip_t *g) {
    if (!g || g->stopping)
        return;
    g->stopping = true;
    for (int i = 0; i < 256; i++) {
        if (g->clis[i])
            cli_finish(g->clis[i], false);
    }
    for (pull_srv_t *s = g->srvs, *next; s; s = next) {
        next = s->next;
        srv_close(s);
    }
    close_handle((uv_handle_t *)&g->udp);
    close_handle((uv_handle_t *)&g->tcp);
    close_handle((uv_handle_t *)&g->full_timer);
    close_handle((uv_handle_t *)&g->delta_timer);
    close_handle((uv_handle_t *)&g->sync_timer);
    close_handle((uv_handle_t *)&g->pull_timer);
    close_handle((uv_handle_t *)&g->sweep_timer);
}

nsrv_gossip_node_t *nsrv_gossip_engine(nsrv_gossip_t *g) {
    return g->node;
}
