/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The gossip transport's state, shared by transport.c (UDP, the one timer,
 * configuration), pull_io.c (the pull TCP client and server) and resolve.c
 * (name lookups). None decides anything about gossip: the engine
 * (gossip_node.h) does, down to which name to look up and which pull
 * connection to close.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include "nsrv/gossip.h"
#include "nsrv/seal.h"

typedef struct nsrv__pull_srv nsrv__pull_srv_t;
typedef struct nsrv__pull_cli nsrv__pull_cli_t;

struct nsrv_gossip {
    uv_loop_t *loop;
    nsrv_route_t *rt;
    nsrv_gossip_peers_t *peers;
    nsrv_gossip_node_t *node;
    uint8_t node_id;
    uv_udp_t udp;
    uv_tcp_t tcp;
    uv_timer_t timer;   /* the engine's next deadline */
    int resolve_family; /* what the gossip socket can send to (resolve.c) */
    char rbuf[NSRV_GOSSIP_DGRAM_MAX];
    nsrv__pull_srv_t *srvs;
    nsrv__pull_cli_t *clis;
    int open_handles;
    bool stopping, pumping;
    uint8_t sk[NSRV_SEAL_SK_LEN];
};

/* transport.c */
uint64_t nsrv__gossip_mono(void);
/* Carries out the engine's actions and re-arms the timer. Call after every input. */
void nsrv__gossip_pump(nsrv_gossip_t *g);
/* One handle of g is closed; the last one after a stop frees g. */
void nsrv__gossip_handle_released(nsrv_gossip_t *g);

/* resolve.c */
/* NSRV_GOSSIP_ACT_RESOLVE: looks up host (len bytes) for peer on libuv's thread pool; the
 * answer goes to the engine (nsrv_gossip_node_resolved). */
void nsrv__gossip_resolve(nsrv_gossip_t *g, uint8_t peer, const uint8_t *host, size_t len);

/* pull_io.c */
void nsrv__pull_listen_cb(uv_stream_t *l, int status);
void nsrv__pull_start(nsrv_gossip_t *g, uint8_t peer, uint32_t pull_id, const uint8_t *req,
                      size_t len);
void nsrv__pull_cancel(nsrv_gossip_t *g, uint8_t peer, uint32_t pull_id);
/* NSRV_GOSSIP_ACT_CLOSE: closes server connection conn. */
void nsrv__pull_srv_close(nsrv_gossip_t *g, uint32_t conn);
/* Closes every pull connection (stop). */
void nsrv__pull_close_all(nsrv_gossip_t *g);
