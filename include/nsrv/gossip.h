/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Gossip as the server runs it: the UDP socket, the TCP pull listener and
 * client, the timers, configuration and SIGHUP reload (transport.c), around
 * the engine of gossip_node.h. Loop thread only.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "nsrv/gossip_node.h"
#include "nsrv/gossip_peer.h"

struct nsrv_config;
struct uv_loop_s;

typedef struct nsrv_gossip nsrv_gossip_t;

/* Peers parsed from gossipPeers and gossipPeerKeys (gconf.c, pure). */
typedef struct {
    nsrv_gossip_peer_conf_t confs[NSRV_GOSSIP_NODE_MAX];
    size_t n;
    char addrs[NSRV_GOSSIP_NODE_MAX][64];
    nsrv_gossip_key_t keys[NSRV_GOSSIP_NODE_MAX][NSRV_GOSSIP_MAX_KEYS];
    /* This node's own public keys when the list shared by every node holds them: checked
     * against the secret key file (nsrv_gossip_check_own_key). */
    nsrv_gossip_key_t self_keys[NSRV_GOSSIP_MAX_KEYS];
    size_t n_self_keys;
} nsrv_gossip_peer_list_t;

/*
 * Parses gossipPeers ("id@ip:port,...") and gossipPeerKeys
 * ("id:keyId:base64,...") into list. Every peer needs at least one key; a
 * key for an unlisted peer, our own id among the peers, a duplicate (the same
 * node and key id twice, this node's own included), or a bad token is an error
 * naming it. Returns 0 or -EINVAL with a message in err.
 */
int nsrv_gossip_parse_peers(const char *peers, const char *keys, uint8_t self_id,
                            nsrv_gossip_peer_list_t *list, char *err, size_t errlen);

/*
 * When list holds this node's own public key under key_id, it must be pk, the public half
 * of the secret key file (a key id not listed cannot be checked and passes): a node signing with
 * another node's key (or an old one) is refused by every peer, so it is refused here first. Returns
 * 0 or -EINVAL with the reason in err.
 */
int nsrv_gossip_check_own_key(const nsrv_gossip_peer_list_t *list, uint8_t self_id, uint8_t key_id,
                              const uint8_t pk[32], char *err, size_t errlen);

/*
 * The local node's next incarnation: max(stored + 1, now_wall_ms) (stored = 0
 * when path does not exist), written to path (decimal text) atomically and
 * fsync'ed before it is returned, so it survives a crash right after.
 * Returns 0, -EINVAL if the file exists but does not hold one decimal number,
 * or -errno from reading or writing. Blocking: startup only.
 */
int nsrv_gossip_incarnation_next(const char *path, int64_t now_wall_ms, uint64_t *inc);

/* Where the incarnation survives restarts: gossipStatePath, or "gossip.state" next to
 * kvConfigPath when it is empty. */
void nsrv_gossip_state_path(const struct nsrv_config *cfg, char *out, size_t cap);

/*
 * Starts gossip when cfg->gossip_enable: loads the secret key, bumps and
 * persists the incarnation, binds UDP and TCP on gossipListenAddress:gossipPort,
 * asks every peer for a full digest (SYNC_REQ) and for everything it holds
 * (PULL ALL). Returns NULL with a message in err on failure.
 */
/* cfg outlives the gossip: the registration limits are read from it at each pull. */
/* announce: what this node tells its peers of where it serves (NULL: nothing). */
nsrv_gossip_t *nsrv_gossip_start(struct uv_loop_s *loop, const struct nsrv_config *cfg,
                                 nsrv_route_t *rt, const nsrv_gossip_announce_t *announce,
                                 char *err, size_t errlen);
/* SIGHUP of advertisedAddress: announced from the next full digest on. */
void nsrv_gossip_set_announce(nsrv_gossip_t *g, const nsrv_gossip_announce_t *announce);
/* Graceful stop: tells the peers that speak it that this node is leaving (LEAVE datagrams
 * sent now, before the sockets close). */
void nsrv_gossip_leave(nsrv_gossip_t *g);
/* SIGHUP: applies peers, keys and the signing key of cfg; on error keeps the old ones. */
int nsrv_gossip_reload(nsrv_gossip_t *g, const struct nsrv_config *cfg, char *err, size_t errlen);
/* Closes every handle; the object frees itself once they are closed. */
void nsrv_gossip_stop(nsrv_gossip_t *g);
nsrv_gossip_node_t *nsrv_gossip_engine(nsrv_gossip_t *g);
