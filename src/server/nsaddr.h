/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The RocketMQ address service (docs/design/observability.md): GET /rocketmq/<subgroup> on the
 * status listener answers "host:port;host:port" with the NameServer addresses of this node
 * and of every gossip peer heard within NSRV_GOSSIP_ALIVE_INTERVALS full-digest intervals,
 * in node id order (Java clients compare the text to detect a change).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "nsrv/buf.h"
#include "nsrv/gossip_msg.h"

struct nsrv_config;
typedef struct nsrv_server nsrv_server_t;

/* Room for a host name of up to 120 bytes, ':' and a port. */
#define NSRV_NSADDR_MAX 128

/* Advertised addresses by node id; "" = derive (the peer's gossip IP and our listenPort). */
typedef struct nsrv_nsaddr_map {
    char by_id[256][NSRV_NSADDR_MAX];
} nsrv_nsaddr_map_t;

/* "host:port" where host is a DNS name or IPv4 literal, or "[v6]:port"; nothing that could
 * break the ';'-separated list (no ';', ',', spaces, control bytes). */
bool nsrv_nsaddr_valid(const char *hostport);

/*
 * Parses gossipPeerAdvertisedAddresses: "id@host:port,..." (ids 1..254, each once). An empty
 * string clears the map. Returns 0, or -EINVAL with a message naming the bad token.
 */
int nsrv_nsaddr_parse_map(const char *spec, nsrv_nsaddr_map_t *out, char *err, size_t errlen);

/* Applies advertisedAddress, gossipPeerAdvertisedAddresses and addressServiceSubgroup of cfg
 * (start-up, after the listener is bound; SIGHUP). Returns 0, or -EINVAL with err set and
 * the previous settings kept. */
int nsrv__nsaddr_configure(nsrv_server_t *srv, const struct nsrv_config *cfg, char *err,
                           size_t errlen);
/* True if path (no query) is /rocketmq/<the configured subgroup>. */
bool nsrv__nsaddr_path(nsrv_server_t *srv, const char *path, size_t len);
/* What this node announces to its peers (proto/gossip.md §5.7): its NameServer endpoint
 * (advertisedAddress; else bindAddress when specific, else an empty host: the peers use the
 * address they see it from; with the bound listen port) and its status endpoint (likewise
 * from statusAddress and statusPort; port 0 when the status listener is off). The strings
 * live in hosts[0] and hosts[1]. */
typedef struct {
    char hosts[2][NSRV_NSADDR_MAX];
    nsrv_gossip_announce_t a;
} nsrv__announce_t;
void nsrv__nsaddr_announce(const nsrv_server_t *srv, const struct nsrv_config *cfg,
                           nsrv__announce_t *out);
/* Appends the list and a newline. */
void nsrv__nsaddr_write(nsrv_server_t *srv, nsrv_buf_t *out);
