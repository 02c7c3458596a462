/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Gossip I/O (include/nsrv/gossip.h): one UDP socket for digests, the pull
 * TCP listener and client (pull_io.c), and the one timer the engine asks
 * for. It moves bytes and carries out the engine's actions; every decision
 * of when to send, pull, retry or give up is the engine's (node_sched.c).
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

#include "transport_int.h"

static void timer_cb(uv_timer_t *t);

uint64_t nsrv__gossip_mono(void) {
    return nsrv_now_mono_ms();
}

static uint64_t mono(void) {
    return nsrv_now_mono_ms();
}

void nsrv__gossip_handle_released(nsrv_gossip_t *g) {
    if (--g->open_handles == 0 && g->stopping) {
        nsrv_gossip_node_destroy(&g->node);
        nsrv_gossip_peers_destroy(&g->peers);
        nsrv_seal_wipe(g->sk, sizeof g->sk);
        nsrv_free(g);
    }
}

static void handle_closed(uv_handle_t *h) {
    nsrv__gossip_handle_released(h->data);
}

static void close_handle(uv_handle_t *h) {
    if (!uv_is_closing(h))
        uv_close(h, handle_closed);
}

/* ---- UDP ---- */

static void udp_send(nsrv_gossip_t *g, uint8_t dst, const uint8_t *d, size_t len) {
    nsrv_gossip_peer_t *p = nsrv_gossip_peers_find(g->peers, dst);
    if (!p || g->stopping || !nsrv_gossip_peer_has_addr(p))
        return; /* a name not resolved yet: nowhere to send */
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
    nsrv__gossip_pump(g);
}

/* ---- the engine's actions and its one timer ---- */

void nsrv__gossip_pump(nsrv_gossip_t *g) {
    if (g->stopping || g->pumping)
        return;
    g->pumping = true;
    nsrv_gossip_action_t a;
    while (nsrv_gossip_node_poll(g->node, &a)) {
        switch (a.kind) {
        case NSRV_GOSSIP_ACT_SEND:
            udp_send(g, a.peer, a.data, a.len);
            break;
        case NSRV_GOSSIP_ACT_PULL:
            nsrv__pull_start(g, a.peer, a.pull_id, a.data, a.len);
            break;
        case NSRV_GOSSIP_ACT_PULL_CANCEL:
            nsrv__pull_cancel(g, a.peer, a.pull_id);
            break;
        case NSRV_GOSSIP_ACT_RESOLVE:
            nsrv__gossip_resolve(g, a.peer, a.data, a.len);
            break;
        case NSRV_GOSSIP_ACT_CLOSE:
            nsrv__pull_srv_close(g, a.pull_id);
            break;
        default:
            break;
        }
    }
    g->pumping = false;
    uint64_t now = mono();
    uint64_t due = nsrv_gossip_node_deadline(g->node);
    uv_timer_start(&g->timer, timer_cb, due > now ? due - now : 0, 0);
}

static void timer_cb(uv_timer_t *t) {
    nsrv_gossip_t *g = t->data;
    nsrv_gossip_node_tick(g->node, mono(), nsrv_now_wall_ms());
    nsrv__gossip_pump(g);
}

/* ---- configuration ---- */

/* All or nothing: on any error (peers, keys, the secret key file, our own key not matching
 * it) the running peers and key stay as they were. */
static int apply_config(nsrv_gossip_t *g, const nsrv_config_t *cfg, bool first, char *err,
                        size_t errlen) {
    nsrv_gossip_peer_list_t *list = nsrv_malloc(sizeof *list);
    uint8_t pk[NSRV_SEAL_PK_LEN], sk[NSRV_SEAL_SK_LEN];
    int rc = nsrv_gossip_parse_peers(cfg->gossip_peers, cfg->gossip_peer_keys,
                                     (uint8_t)cfg->gossip_node_id, list, err, errlen);
    if (rc == 0) {
        rc = nsrv_seal_sk_load(cfg->gossip_secret_key_file, pk, sk);
        if (rc != 0)
            nsrv_seal_sk_load_explain(cfg->gossip_secret_key_file, rc,
                                      (unsigned)cfg->gossip_node_id, err, errlen);
    }
    if (rc == 0)
        rc = nsrv_gossip_check_own_key(list, (uint8_t)cfg->gossip_node_id,
                                       (uint8_t)cfg->gossip_key_id, pk, err, errlen);
    if (rc == 0 &&
        (rc = first ? nsrv_gossip_peers_configure(g->peers, list->confs, list->n)
                    : nsrv_gossip_node_configure_peers(g->node, list->confs, list->n)) != 0)
        snprintf(err, errlen, "gossipPeers/gossipPeerKeys rejected");
    nsrv_free(list);
    if (rc == 0) {
        memcpy(g->sk, sk, sizeof sk);
        if (!first)
            nsrv_gossip_node_set_key(g->node, (uint8_t)cfg->gossip_key_id, g->sk);
    }
    nsrv_seal_wipe(sk, sizeof sk);
    return rc;
}

int nsrv_gossip_reload(nsrv_gossip_t *g, const nsrv_config_t *cfg, char *err, size_t errlen) {
    int rc = apply_config(g, cfg, false, err, errlen);
    if (rc == 0) {
        nsrv_gossip_node_resolve_all(g->node,
                                     mono()); /* SIGHUP also means: look the names up again */
        nsrv__gossip_pump(g);
    }
    return rc;
}

/* An IPv4 socket sends to IPv4 only; an IPv6 one (dual-stack) to either. */
static int ss_family_of(const char *listen_host) {
    struct sockaddr_storage ss;
    if (nsrv_sockaddr_literal(listen_host, 0, &ss) == 0 && ss.ss_family == AF_INET)
        return AF_INET;
    return AF_UNSPEC;
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
        /* The NameServer port's backlog: with a small one, a connection flood overflows the
         * accept queue whenever the loop is descheduled, and Linux then drops the handshake's
         * last ACK, so the kernel hands over that connection only after its 1 s SYN-ACK retry. */
        rc = uv_listen((uv_stream_t *)&g->tcp, cfg->server_socket_backlog, nsrv__pull_listen_cb);
    if (rc != 0)
        snprintf(err, errlen, "cannot bind gossip on %s:%d: %s", host, port, uv_strerror(rc));
    return rc;
}

nsrv_gossip_t *nsrv_gossip_start(uv_loop_t *loop, const nsrv_config_t *cfg, nsrv_route_t *rt,
                                 const nsrv_gossip_announce_t *announce, char *err, size_t errlen) {
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
    g->peers = nsrv_gossip_peers_create((uint32_t)cfg->gossip_max_datagram);
    if (apply_config(g, cfg, true, err, errlen) != 0)
        goto fail;
    char state[4096];
    nsrv_gossip_state_path(cfg, state, sizeof state);
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
        .interval_ms = (uint32_t)cfg->gossip_interval_ms,
        .delta_ms = (uint32_t)cfg->gossip_delta_ms,
        .reg_max_topics = &cfg->register_max_topics,
        .reg_max_decoded_bytes = &cfg->register_max_decoded_bytes,
    };
    g->node = nsrv_gossip_node_create(&o, rt, g->peers);
    if (!g->node) {
        snprintf(err, errlen, "bad gossip settings (cluster name 1..64 bytes?)");
        goto fail;
    }
    nsrv_gossip_node_set_announce(g->node, announce);
    uv_udp_init(loop, &g->udp);
    g->udp.data = g;
    g->open_handles++;
    uv_tcp_init(loop, &g->tcp);
    g->tcp.data = g;
    g->open_handles++;
    uv_timer_init(loop, &g->timer);
    g->timer.data = g;
    g->open_handles++;
    if (bind_both(g, cfg, err, errlen) != 0) {
        nsrv_gossip_stop(g);
        return NULL;
    }
    g->resolve_family = ss_family_of(cfg->gossip_listen_address);
    nsrv_gossip_node_start(g->node, mono(), nsrv_now_wall_ms());
    nsrv__gossip_pump(g);
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
    nsrv__pull_close_all(g);
    close_handle((uv_handle_t *)&g->udp);
    close_handle((uv_handle_t *)&g->tcp);
    close_handle((uv_handle_t *)&g->timer);
}

void nsrv_gossip_set_announce(nsrv_gossip_t *g, const nsrv_gossip_announce_t *announce) {
    nsrv_gossip_node_set_announce(g->node, announce);
}

void nsrv_gossip_leave(nsrv_gossip_t *g) {
    if (!g || g->stopping || !nsrv_gossip_node_started(g->node))
        return;
    size_t told = nsrv_gossip_node_leave(g->node, mono(), nsrv_now_wall_ms());
    nsrv__gossip_pump(g); /* uv_udp_try_send: out before the socket closes */
    if (told)
        nsrv_log_notice("GOSSIP", "told %zu peer(s) that this node is leaving", told);
}

nsrv_gossip_node_t *nsrv_gossip_engine(nsrv_gossip_t *g) {
    return g->node;
}
