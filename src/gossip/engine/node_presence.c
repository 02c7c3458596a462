/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Presence: where each node serves (ANNOUNCE), that it is stopping (LEAVE),
 * and the log lines of a peer going silent and coming back
 * (proto/gossip.md §5.7, §5.8, §9.5). Part of the sans-I/O engine: times come
 * in as arguments, datagrams go out through the outbox.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "nsrv/log.h"
#include "nsrv/netaddr.h"
#include "nsrv/text.h"

#include "node_int.h"

void nsrv_gossip_node_set_announce(nsrv_gossip_node_t *n, const nsrv_gossip_announce_t *a) {
    const char *why = a ? nsrv_gossip_announce_problem(a) : NULL;
    if (!a || why) {
        n->ann_ns_port = 0;
        /* Set at start-up and on SIGHUP only: one line each, never a flood. */
        if (why)
            nsrv_log_warn("GOSSIP",
                          "announcing nothing to the peers (they list this node at its gossip "
                          "address with their own port): %s",
                          why);
        return;
    }
    memcpy(n->ann_ns_host, a->ns_host.ptr ? a->ns_host.ptr : "", a->ns_host.len);
    n->ann_ns_host[a->ns_host.len] = '\0';
    memcpy(n->ann_status_host, a->status_host.ptr ? a->status_host.ptr : "", a->status_host.len);
    n->ann_status_host[a->status_host.len] = '\0';
    n->ann_ns_port = a->ns_port;
    n->ann_status_port = a->status_port;
}

void nsrv__announce_to(nsrv_gossip_node_t *n, uint8_t peer, uint64_t now_mono, int64_t now_wall) {
    nsrv__peer_state_t *ps = nsrv__ps(n, peer);
    if (n->ann_ns_port == 0)
        return;
    /* A peer of an older version refuses the type (and says so in its log and /health):
     * it gets a few tries per incarnation, a peer that announced itself gets every one. */
    if (!ps->announced) {
        if (ps->announces_sent >= NSRV_GOSSIP_ANNOUNCE_TRIES)
            return;
        ps->announces_sent++;
    }
    nsrv_gossip_announce_t a = {nsrv_str_c(n->ann_ns_host), n->ann_ns_port,
                                nsrv_str_c(n->ann_status_host), n->ann_status_port};
    nsrv__emit_ctx_t e = {n, peer};
    nsrv_gossip_send_opts_t so = nsrv__send_opts(n, peer, now_mono, now_wall);
    nsrv_gossip_sender_announce(&n->sender, &so, &a, nsrv__emit_cb, &e);
}

size_t nsrv_gossip_node_leave(nsrv_gossip_node_t *n, uint64_t now_mono, int64_t now_wall) {
    size_t told = 0;
    for (size_t i = 0; i < nsrv_gossip_peers_count(n->peers); i++) {
        uint8_t dst = nsrv_gossip_peer_id(nsrv_gossip_peers_at(n->peers, i));
        const nsrv__peer_state_t *ps = nsrv__ps(n, dst);
        /* Only peers that speak it: an older one would log the datagram as refused. */
        if (!ps || !ps->announced)
            continue;
        nsrv__emit_ctx_t e = {n, dst};
        nsrv_gossip_send_opts_t so = nsrv__send_opts(n, dst, now_mono, now_wall);
        /* Twice: one lost datagram should not cost the peers the alive window. */
        for (int k = 0; k < NSRV_GOSSIP_LEAVE_COPIES; k++)
            nsrv_gossip_sender_leave(&n->sender, &so, nsrv__emit_cb, &e);
        told++;
    }
    return told;
}

/* host:port, brackets around an IPv6 host, the source IP for an empty host. */
static void endpoint_text(nsrv_str_t host, uint16_t port, const struct sockaddr *from, char *out,
                          size_t cap) {
    char h[NSRV_GOSSIP_ANN_HOST_MAX + 1];
    if (host.len)
        snprintf(h, sizeof h, "%.*s", (int)host.len, host.ptr);
    else
        nsrv_sockaddr_host(from, h, sizeof h);
    nsrv_hostport_format(h, port, out, cap);
}

void nsrv__on_presence(nsrv_gossip_node_t *n, uint8_t peer, const nsrv_gossip_msg_t *m,
                       const struct sockaddr *from, uint64_t now_mono) {
    nsrv__peer_state_t *ps = nsrv__ps(n, peer);
    if (m->type == NSRV_GOSSIP_LEAVE) {
        if (ps->left_inc == m->src_inc)
            return; /* the second copy */
        ps->left_inc = m->src_inc;
        ps->silent = false;
        ps->gone_at = now_mono;
        nsrv_log_notice("GOSSIP", "node %u left: it is shutting down", peer);
        return;
    }
    const nsrv_gossip_announce_t *a = &m->body.announce;
    char ns[NSRV__ADDR_TEXT_MAX], st[NSRV__ADDR_TEXT_MAX] = "";
    endpoint_text(a->ns_host, a->ns_port, from, ns, sizeof ns);
    if (a->status_port)
        endpoint_text(a->status_host, a->status_port, from, st, sizeof st);
    ps->announced = true;
    if (strcmp(ns, ps->ns_addr) != 0 || strcmp(st, ps->status_addr) != 0)
        nsrv_log_info("GOSSIP", "node %u serves NameServer clients at %s, status at %s", peer, ns,
                      *st ? st : "(none)");
    snprintf(ps->ns_addr, sizeof ps->ns_addr, "%s", ns);
    snprintf(ps->status_addr, sizeof ps->status_addr, "%s", st);
}

bool nsrv__peer_alive(const nsrv_gossip_node_t *n, const nsrv_gossip_peer_info_t *info,
                      uint64_t now_mono) {
    const nsrv__peer_state_t *ps = nsrv__ps(n, info->node_id);
    if (ps && ps->left_inc && ps->left_inc == info->incarnation)
        return false;
    return info->has_incarnation &&
           now_mono - info->last_valid_mono_ms <= nsrv_gossip_node_alive_window_ms(n);
}

void nsrv__watch_peer(nsrv_gossip_node_t *n, nsrv_gossip_peer_t *p, uint64_t now_mono) {
    nsrv_gossip_peer_info_t info;
    nsrv_gossip_peer_info(p, &info);
    if (!info.has_incarnation)
        return;
    nsrv__peer_state_t *ps = nsrv__ps(n, info.node_id);
    char away[NSRV_DURATION_TEXT_MAX];
    if (ps->left_inc && info.incarnation > ps->left_inc) {
        nsrv_log_notice("GOSSIP", "node %u is back after %s (restarted)", info.node_id,
                        nsrv_fmt_duration_ms(now_mono - ps->gone_at, away, sizeof away));
        ps->left_inc = 0;
        ps->silent = false;
    }
    if (ps->left_inc)
        return;
    bool alive = nsrv__peer_alive(n, &info, now_mono);
    if (!alive && !ps->silent) {
        ps->silent = true;
        ps->gone_at = info.last_valid_mono_ms;
        nsrv_log_warn("GOSSIP", "node %u is silent: nothing valid from it for %s", info.node_id,
                      nsrv_fmt_duration_ms(now_mono - ps->gone_at, away, sizeof away));
    } else if (alive && ps->silent) {
        ps->silent = false;
        nsrv_log_notice("GOSSIP", "node %u is back after %s%s", info.node_id,
                        nsrv_fmt_duration_ms(now_mono - ps->gone_at, away, sizeof away),
                        info.new_incarnation ? " (restarted)" : "");
    }
}

const char *nsrv_gossip_node_peer_state(nsrv_gossip_node_t *n, uint8_t peer_id, uint64_t now_mono) {
    nsrv_gossip_peer_t *p = nsrv_gossip_peers_find(n->peers, peer_id);
    if (!p)
        return NULL;
    nsrv_gossip_peer_info_t info;
    nsrv_gossip_peer_info(p, &info);
    const nsrv__peer_state_t *ps = nsrv__ps(n, peer_id);
    if (ps && ps->left_inc && ps->left_inc == info.incarnation)
        return "left";
    if (nsrv__peer_alive(n, &info, now_mono))
        return "up";
    if (info.host && (!info.has_addr || info.resolve_error))
        return "unresolved";
    return "silent";
}

const char *nsrv_gossip_node_peer_nsaddr(nsrv_gossip_node_t *n, uint8_t peer_id) {
    const nsrv__peer_state_t *ps = nsrv__ps(n, peer_id);
    return ps && *ps->ns_addr ? ps->ns_addr : NULL;
}

const char *nsrv_gossip_node_peer_status_addr(nsrv_gossip_node_t *n, uint8_t peer_id) {
    const nsrv__peer_state_t *ps = nsrv__ps(n, peer_id);
    return ps && *ps->status_addr ? ps->status_addr : NULL;
}
