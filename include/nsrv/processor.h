/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Request processing: maps one decoded RocketMQ request onto the route table,
 * the KV store and the config, and builds the response command. The only
 * module that turns internal results into RocketMQ response codes.
 * Loop thread only.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "nsrv/arena.h"
#include "nsrv/buf.h"
#include "nsrv/mq_codes.h"
#include "nsrv/remoting.h"

struct nsrv_config;
typedef struct nsrv_route nsrv_route_t;
typedef struct nsrv_kv nsrv_kv_t;

typedef struct nsrv_processor nsrv_processor_t;

/* Borrows cfg, rt and kv for the processor's lifetime. start_ms: monotonic
 * time the node started (for needWaitForService). */
nsrv_processor_t *nsrv_processor_create(struct nsrv_config *cfg, nsrv_route_t *rt, nsrv_kv_t *kv,
                                        uint64_t start_ms);
void nsrv_processor_destroy(nsrv_processor_t **p);

/*
 * Handles req and fills *resp (a response command in req's serialize type,
 * with strings in arena and the body in body_out or borrowed from the route
 * cache, valid until the next call). The handler always runs; the caller
 * must not send resp for oneway requests.
 */
void nsrv_processor_handle(nsrv_processor_t *p, const nsrv_cmd_t *req, uint64_t conn_id,
                           uint64_t now_ms, nsrv_arena_t *arena, nsrv_buf_t *body_out,
                           nsrv_cmd_t *resp);

/* Called for every UNREGISTER_BROKER a broker sends, before it is applied
 * (gossip spreads it as a tombstone). fn NULL disables it. */
typedef void (*nsrv_unregister_hook_t)(void *ud, const char *cluster, const char *addr,
                                       const char *name, int64_t id);
void nsrv_processor_set_unregister_hook(nsrv_processor_t *p, nsrv_unregister_hook_t fn, void *ud);

/* Fills *resp with GO_AWAY ("please go away") for req. */
void nsrv_processor_go_away(const nsrv_cmd_t *req, nsrv_cmd_t *resp);
