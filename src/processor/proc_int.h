/* SPDX-License-Identifier: Apache-2.0 */
/* Private to the processor module: the handler context and reply helpers. */
#pragma once

#include "nsrv/arena.h"
#include "nsrv/buf.h"
#include "nsrv/processor.h"
#include "nsrv/remoting.h"

/* A route query's SUCCESS reply head as the generic encoder writes it for an opaque of
 * ROUTE_FAST_OPAQUE, with where that opaque is, so that the fast path writes the head of
 * another opaque by copying around it (proc_route_fast.c). len 0: not usable. */
typedef struct {
    uint8_t bytes[NSRV_ROUTE_FAST_HEAD_MAX];
    size_t len;
    size_t opaque_at, opaque_len; /* the opaque's bytes: 4 big-endian, or decimal digits */
} nsrv_route_fast_tmpl_t;

struct nsrv_processor {
    struct nsrv_config *cfg;
    nsrv_route_t *rt;
    nsrv_kv_t *kv;
    uint64_t start_ms;
    nsrv_unregister_hook_t unregister_hook;
    void *unregister_ud;
    bool async;                  /* replies and durable are set */
    nsrv_reply_host_t replies;   /* deferred replies (server) */
    nsrv_durable_host_t durable; /* durable writes off the loop (server) */
    nsrv_acl_t *acl;             /* owned; NULL: nothing restricted */
    /* The fast path's reply heads, by serialize type (proc_route_fast.c). */
    nsrv_route_fast_tmpl_t route_fast_tmpl[2];
};

/* Everything one handler needs for one request. */
typedef struct {
    nsrv_processor_t *p;
    const nsrv_cmd_t *req;
    nsrv_cmd_t *resp;
    nsrv_arena_t *arena;
    nsrv_buf_t *body; /* the response body, when the handler builds one */
    uint64_t conn_id;
    uint64_t now_ms;
    bool deferred;          /* the reply goes through a pending reply slot (proc_durable.c) */
    nsrv_proc_prep_t *prep; /* work done ahead (NULL: none) */
} nsrv_proc_ctx_t;

typedef void (*nsrv_proc_handler_t)(nsrv_proc_ctx_t *ctx);

/* The handler of a request code, or NULL if nsrvd does not serve it. */
nsrv_proc_handler_t nsrv__processor_find_handler(int32_t code);

/* The request handlers, one a request code (the table is in processor.c). */
void nsrv_proc_put_kv_config(nsrv_proc_ctx_t *ctx);
void nsrv_proc_get_kv_config(nsrv_proc_ctx_t *ctx);
void nsrv_proc_delete_kv_config(nsrv_proc_ctx_t *ctx);
void nsrv_proc_get_kv_list(nsrv_proc_ctx_t *ctx);
void nsrv_proc_register_broker(nsrv_proc_ctx_t *ctx);
void nsrv_proc_unregister_broker(nsrv_proc_ctx_t *ctx);
void nsrv_proc_query_data_version(nsrv_proc_ctx_t *ctx);
void nsrv_proc_broker_heartbeat(nsrv_proc_ctx_t *ctx);
void nsrv_proc_get_route_info(nsrv_proc_ctx_t *ctx);
void nsrv_proc_get_cluster_info(nsrv_proc_ctx_t *ctx);
void nsrv_proc_wipe_write_perm(nsrv_proc_ctx_t *ctx);
void nsrv_proc_add_write_perm(nsrv_proc_ctx_t *ctx);
void nsrv_proc_get_all_topic_list(nsrv_proc_ctx_t *ctx);
void nsrv_proc_get_unit_topic_list(nsrv_proc_ctx_t *ctx);
void nsrv_proc_get_unit_sub_topic_list(nsrv_proc_ctx_t *ctx);
void nsrv_proc_get_unit_sub_ununit_topic_list(nsrv_proc_ctx_t *ctx);
void nsrv_proc_get_topics_by_cluster(nsrv_proc_ctx_t *ctx);
void nsrv_proc_get_system_topic_list(nsrv_proc_ctx_t *ctx);
void nsrv_proc_delete_topic(nsrv_proc_ctx_t *ctx);
void nsrv_proc_register_topic(nsrv_proc_ctx_t *ctx);
void nsrv_proc_get_member_group(nsrv_proc_ctx_t *ctx);
void nsrv_proc_update_config(nsrv_proc_ctx_t *ctx);
void nsrv_proc_get_config(nsrv_proc_ctx_t *ctx);

/*
 * Finishes a handler that changed target in memory: with async hosts, asks
 * for the durable write and defers the reply until it is done (SUCCESS, or
 * SYSTEM_ERROR "persist <what> failed: <reason>"); returns true. Without
 * them returns false and the handler persists synchronously.
 */
bool nsrv_proc_defer_until_durable(nsrv_proc_ctx_t *ctx, nsrv_durable_target_t target,
                                   const char *what);

/* Runs the access policy on ctx->req from peer: true if it may run, else
 * ctx->resp is NO_PERMISSION with the policy's remark (proc_acl.c). */
bool nsrv__proc_acl_permits(nsrv_proc_ctx_t *ctx, const struct sockaddr *peer);

/* REGISTER_BROKER's prepared part: the CRC check and the body decode (proc_broker.c). */
void nsrv__proc_prepare_register(const nsrv_prep_limits_t *lim, const nsrv_cmd_t *req,
                                 nsrv_arena_t *arena, nsrv_proc_prep_t *out);

/* Pushes the route-related config (supportActingMaster, ...) into the route table. */
void nsrv__processor_apply_route_opts(nsrv_processor_t *p);

/* GET_ROUTEINFO_BY_TOPIC's steps (proc_route.c), shared by its handler and its fast path
 * (proc_route_fast.c) so both answer alike. Whether the node serves routes at now_ms
 * (needWaitForService): */
bool nsrv__proc_route_ready(const nsrv_processor_t *p, uint64_t now_ms);
/* Sets resp's body to topic's route (standard JSON or Java's default form; zone NULL or a
 * zone filter); 0, or -ENOENT (resp unchanged) when the table has no such topic. */
int nsrv__proc_route_body(nsrv_processor_t *p, const char *topic, bool standard, const char *zone,
                          uint64_t now_ms, nsrv_cmd_t *resp);

/* Makes the fast path's reply templates (at creation). */
void nsrv__proc_route_fast_init(nsrv_processor_t *p);

/* A SUCCESS response to req, mirroring its opaque and serialize type. */
void nsrv_proc_init_response(const nsrv_cmd_t *req, nsrv_cmd_t *resp);

/* Ext value as a NUL-terminated string, or NULL if absent (inline: the
 * handlers' literal keys have their lengths folded). */
static inline const char *nsrv_proc_ext(const nsrv_proc_ctx_t *ctx, const char *key) {
    return nsrv_cmd_ext(ctx->req, key).ptr;
}
/* Java's Long.parseLong / Boolean.parseBoolean semantics: false if absent or malformed. */
bool nsrv_proc_ext_i64(const nsrv_proc_ctx_t *ctx, const char *key, int64_t *out);
bool nsrv_proc_ext_true(const nsrv_proc_ctx_t *ctx, const char *key);

void nsrv_proc_set_code(nsrv_proc_ctx_t *ctx, int32_t code, const char *remark);
void nsrv_proc_set_remarkf(nsrv_proc_ctx_t *ctx, int32_t code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Adds an ext field to the response (strings copied into the arena). Marks has_ext. */
void nsrv_proc_add_ext(nsrv_proc_ctx_t *ctx, const char *key, const char *val);
/* Marks the response as carrying an (empty) extFields object: Java's response headers. */
void nsrv_proc_use_ext(nsrv_proc_ctx_t *ctx);
/* Uses ctx->body as the response body. */
void nsrv_proc_use_body(nsrv_proc_ctx_t *ctx);
