/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The gossip transport's state, shared by transport.c (UDP, the one timer,
 * configuration) and pull_io.c (the pull TCP client and server). Neither
 * decides anything about gossip: the engine (gossip_node.h) does.
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
    uv_timer_t timer; /* the engine's next deadline, or a pull server's */
    /* peer names (resolve.c) */
    uv_timer_t resolve_timer;
    int resolve_family;        /* what the gossip socket can send to */
    unsigned resolve_waiting;  /* start-up lookups the engine still waits for */
    unsigned resolve_inflight; /* at most NSRV_GOSSIP_RESOLVE_MAX_INFLIGHT */
    uint32_t interval_ms;      /* gossipIntervalMs: silence is measured in it */
    uint64_t started_at;
    bool engine_started;
    char rbuf[NSRV_GOSSIP_DGRAM_MAX];
    nsrv__pull_srv_t *srvs;
    nsrv__pull_cli_t *clis;
    int open_handles;
    uint64_t not_peer_logged_at, not_peer_quiet; /* rate-limited log of non-peer pulls */
    bool stopping, pumping;
    uint8_t sk[NSRV_SEAL_SK_LEN];
};

/* transport.c */
uint64_t nsrv__gossip_mono(void);
/* Carries out the engine's actions and re-arms the timer. Call after every input. */
void nsrv__gossip_pump(nsrv_gossip_t *g);
/* One handle of g is closed; the last one after a stop frees g. */
void nsrv__gossip_handle_released(nsrv_gossip_t *g);

/* Starts the engine (once): its SYNC_REQ and start-up pulls. */
void nsrv__gossip_engine_start(nsrv_gossip_t *g);

/* resolve.c */
void nsrv__gossip_resolve_init(nsrv_gossip_t *g);
unsigned nsrv__gossip_resolve_all(nsrv_gossip_t *g);
/* Looks up the names that are due (kick: a packet was just refused for its source). */
void nsrv__gossip_resolve_due(nsrv_gossip_t *g, bool kick);
/* A lookup's answer for peer's name host: sa (the address) or NULL with status (libuv error). */
void nsrv__gossip_resolved(nsrv_gossip_t *g, uint8_t peer, const char *host,
                           const struct sockaddr *sa, int status);

/* pull_io.c */
void nsrv__pull_listen_cb(uv_stream_t *l, int status);
void nsrv__pull_start(nsrv_gossip_t *g, uint8_t peer, uint32_t pull_id, const uint8_t *req,
                      size_t len);
void nsrv__pull_cancel(nsrv_gossip_t *g, uint8_t peer, uint32_t pull_id);
/* Closes server connections past their deadline; returns the next one (UINT64_MAX: none). */
uint64_t nsrv__pull_srv_sweep(nsrv_gossip_t *g, uint64_t now);
/* Closes every pull connection (stop). */
void nsrv__pull_close_all(nsrv_gossip_t *g);
