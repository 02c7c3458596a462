/* SPDX-License-Identifier: Apache-2.0 */
/* The address service list (nsaddr.h): advertised addresses and who is alive. */
#include "nsaddr.h"

#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nsrv/alloc.h"
#include "nsrv/config.h"
#include "nsrv/gossip.h"
#include "nsrv/netaddr.h"
#include "server_int.h"

static bool host_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
           c == '-' || c == '_';
}

bool nsrv_nsaddr_valid(const char *hostport) {
    size_t n = strlen(hostport);
    if (n == 0 || n >= NSRV_NSADDR_MAX)
        return false;
    char host[NSRV_NSADDR_MAX];
    uint16_t port;
    if (nsrv_hostport_split(hostport, host, sizeof host, &port) != 0)
        return false;
    if (hostport[0] == '[') { /* an IPv6 literal */
        struct sockaddr_storage ss;
        return nsrv_sockaddr_literal(host, port, &ss) == 0;
    }
    for (const char *p = host; *p; p++)
        if (!host_char(*p))
            return false;
    return true;
}

int nsrv_nsaddr_parse_map(const char *spec, nsrv_nsaddr_map_t *out, char *err, size_t errlen) {
    memset(out, 0, sizeof *out);
    const char *p = spec ? spec : "";
    while (*p) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        char tok[NSRV_NSADDR_MAX + 8];
        if (len == 0 || len >= sizeof tok) {
            snprintf(err, errlen, "gossipPeerAdvertisedAddresses: bad entry '%.*s'",
                     (int)(len > 64 ? 64 : len), p);
            return -EINVAL;
        }
        memcpy(tok, p, len);
        tok[len] = '\0';
        char *at = strchr(tok, '@');
        char *idend = NULL;
        long id = at ? strtol(tok, &idend, 10) : 0;
        if (!at || idend != at || at == tok || id < 1 || id > 254 || !nsrv_nsaddr_valid(at + 1)) {
            snprintf(err, errlen,
                     "gossipPeerAdvertisedAddresses: '%s' is not id@host:port (id 1..254)", tok);
            return -EINVAL;
        }
        if (out->by_id[id][0]) {
            snprintf(err, errlen, "gossipPeerAdvertisedAddresses: node %ld listed twice", id);
            return -EINVAL;
        }
        snprintf(out->by_id[id], sizeof out->by_id[id], "%s", at + 1);
        p += len + (end ? 1 : 0);
        if (end && !*p) {
            snprintf(err, errlen, "gossipPeerAdvertisedAddresses: trailing ','");
            return -EINVAL;
        }
    }
    return 0;
}

static bool is_wildcard(const char *host) {
    return !host || !*host || strcmp(host, "0.0.0.0") == 0 || strcmp(host, "::") == 0;
}

/* The first IPv4 address of an interface that is up and not loopback, as Java's
 * NetworkUtil.getLocalAddress prefers; 127.0.0.1 when there is none. */
static void first_interface_ipv4(char *out, size_t cap) {
    uv_interface_address_t *ifs = NULL;
    int n = 0;
    snprintf(out, cap, "127.0.0.1");
    if (uv_interface_addresses(&ifs, &n) != 0)
        return;
    for (int i = 0; i < n; i++) {
        if (ifs[i].is_internal || ifs[i].address.address4.sin_family != AF_INET)
            continue;
        uv_ip4_name(&ifs[i].address.address4, out, cap);
        break;
    }
    uv_free_interface_addresses(ifs, n);
}

int nsrv__nsaddr_configure(nsrv_server_t *srv, const nsrv_config_t *cfg, char *err, size_t errlen) {
    nsrv_nsaddr_map_t *map = nsrv_malloc(sizeof *map);
    char self[NSRV_NSADDR_MAX];
    int rc = nsrv_nsaddr_parse_map(cfg->gossip_peer_advertised_addresses, map, err, errlen);
    if (rc == 0 && cfg->advertised_address && *cfg->advertised_address) {
        if (!nsrv_nsaddr_valid(cfg->advertised_address)) {
            snprintf(err, errlen, "advertisedAddress '%s' is not host:port",
                     cfg->advertised_address);
            rc = -EINVAL;
        } else {
            snprintf(self, sizeof self, "%s", cfg->advertised_address);
        }
    } else if (rc == 0) {
        char host[64];
        if (is_wildcard(cfg->bind_address))
            first_interface_ipv4(host, sizeof host);
        else
            snprintf(host, sizeof host, "%s", cfg->bind_address);
        snprintf(self, sizeof self, strchr(host, ':') ? "[%s]:%d" : "%s:%d", host, srv->bound_port);
    }
    const char *sub = cfg->address_service_subgroup ? cfg->address_service_subgroup : "";
    if (rc == 0 &&
        (!*sub || strlen(sub) >= sizeof srv->nsaddr_subgroup ||
         strspn(sub, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.") !=
             strlen(sub))) {
        snprintf(err, errlen, "addressServiceSubgroup '%s': 1..63 of [A-Za-z0-9_.-]", sub);
        rc = -EINVAL;
    }
    if (rc != 0) {
        nsrv_free(map);
        return rc;
    }
    nsrv_free(srv->nsaddr_peers);
    srv->nsaddr_peers = map;
    snprintf(srv->nsaddr_self, sizeof srv->nsaddr_self, "%s", self);
    snprintf(srv->nsaddr_subgroup, sizeof srv->nsaddr_subgroup, "%s", sub);
    srv->nsaddr_self_id = cfg->gossip_enable ? cfg->gossip_node_id : 0;
    return 0;
}

bool nsrv__nsaddr_path(nsrv_server_t *srv, const char *path, size_t len) {
    static const char prefix[] = "/rocketmq/";
    size_t pl = sizeof prefix - 1, sl = strlen(srv->nsaddr_subgroup);
    return len == pl + sl && memcmp(path, prefix, pl) == 0 &&
           memcmp(path + pl, srv->nsaddr_subgroup, sl) == 0;
}

typedef struct {
    nsrv_server_t *srv;
    nsrv_buf_t *out;
    bool self_done;
    size_t n;
} list_walk_t;

static void add(list_walk_t *w, const char *addr) {
    if (w->n++)
        nsrv_buf_append_ch(w->out, ';');
    nsrv_buf_append_c(w->out, addr);
}

/* A wildcard means "any of my addresses": the peers fill in the one they see. */
static void announced_host(const char *bound, char *out, size_t cap) {
    snprintf(out, cap, "%s", is_wildcard(bound) ? "" : bound);
}

void nsrv__nsaddr_announce(const nsrv_server_t *srv, const nsrv_config_t *cfg,
                           nsrv__announce_t *out) {
    memset(out, 0, sizeof *out);
    uint16_t port = (uint16_t)srv->bound_port;
    const char *adv = cfg->advertised_address;
    if (!(adv && *adv && nsrv_nsaddr_valid(adv) &&
          nsrv_hostport_split(adv, out->hosts[0], sizeof out->hosts[0], &port) == 0))
        announced_host(cfg->bind_address, out->hosts[0], sizeof out->hosts[0]);
    if (cfg->status_port) {
        announced_host(cfg->status_address, out->hosts[1], sizeof out->hosts[1]);
        out->a.status_port = (uint16_t)cfg->status_port;
    }
    out->a.ns_host = nsrv_str_c(out->hosts[0]);
    out->a.ns_port = port;
    out->a.status_host = nsrv_str_c(out->hosts[1]);
}

/* Node id order: ourselves where our id falls among the peers. */
static void alive_cb(void *ud, uint8_t id, const struct sockaddr *gossip_addr,
                     const char *announced) {
    list_walk_t *w = ud;
    nsrv_server_t *srv = w->srv;
    if (!w->self_done && srv->nsaddr_self_id < id) {
        add(w, srv->nsaddr_self);
        w->self_done = true;
    }
    /* gossipPeerAdvertisedAddresses overrides what the peer says of itself. */
    const char *cfgd = srv->nsaddr_peers->by_id[id];
    if (*cfgd) {
        add(w, cfgd);
        return;
    }
    if (announced) {
        add(w, announced);
        return;
    }
    /* A peer that announces nothing (an older version): its gossip IP with our own listen
     * port, right in uniform deployments. */
    char ip[NSRV_SOCKADDR_TEXT_MAX], addr[NSRV_NSADDR_MAX];
    nsrv_sockaddr_host(gossip_addr, ip, sizeof ip);
    nsrv_hostport_format(ip, (unsigned)srv->bound_port, addr, sizeof addr);
    add(w, addr);
}

void nsrv__nsaddr_write(nsrv_server_t *srv, nsrv_buf_t *out) {
    list_walk_t w = {srv, out, false, 0};
    if (srv->gossip)
        nsrv_gossip_node_foreach_alive(nsrv_gossip_engine(srv->gossip), nsrv_now_mono_ms(),
                                       alive_cb, &w);
    if (!w.self_done)
        add(&w, srv->nsaddr_self);
    nsrv_buf_append_ch(out, '\n');
}
