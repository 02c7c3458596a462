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

#include <sys/socket.h>

#include "nsrv/acl.h"
#include "nsrv/arena.h"
#include "nsrv/buf.h"
#include "nsrv/mq_codes.h"
#include "nsrv/register_body.h"
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
 * must not send resp for oneway requests. Returns true when the reply was
 * deferred instead (see nsrv_reply_host_t): resp is then not to be sent.
 * peer: the connection's remote address, for the allow lists (NULL: unknown,
 * which no allow list admits).
 */
bool nsrv_processor_handle(nsrv_processor_t *p, const nsrv_cmd_t *req, uint64_t conn_id,
                           const struct sockaddr *peer, uint64_t now_ms, nsrv_arena_t *arena,
                           nsrv_buf_t *body_out, nsrv_cmd_t *resp);

/* The most bytes of a fast-path reply's head (a JSON header with the longest opaque). */
#define NSRV_ROUTE_FAST_HEAD_MAX 160

/* A reply of the fast path: resp as the handler would have set it (SUCCESS, the body
 * borrowed from the route cache), and the bytes nsrv_cmd_encode_head writes for it. */
typedef struct {
    nsrv_cmd_t resp;
    uint8_t head[NSRV_ROUTE_FAST_HEAD_MAX];
    size_t head_len;
} nsrv_route_fast_reply_t;

/*
 * GET_ROUTEINFO_BY_TOPIC's fast path (proc_route_fast.c). Nearly all of a
 * NameServer's load is this one request, sent by clients in one shape: a
 * frame (length prefix included, as nsrv_frame_peek found it) of exactly that
 * shape is read in place and answered as nsrv_cmd_decode, nsrv_processor_handle
 * and nsrv_cmd_encode would answer it on the same state: out gets the same
 * SUCCESS reply, its head written from a template the generic encoder made.
 * Returns false for every other frame, and for a topic the table lacks (its
 * error reply stays generic): the caller then takes the generic path, and
 * nothing has changed but the route table's expiry pass at now_ms, which that
 * path runs first anyway. The caller counts the request and sends the reply as
 * it does a handled one.
 */
bool nsrv_processor_route_fast(nsrv_processor_t *p, const uint8_t *frame, size_t frame_len,
                               uint64_t now_ms, nsrv_route_fast_reply_t *out);

/*
 * The part of a request's work that reads no shared state, done ahead of
 * nsrv_processor_handle_prepared: today, checking a REGISTER_BROKER body's
 * CRC and decoding it (JSON parse or inflate, the bulk of a big
 * registration's cost). A server may run it on a worker thread for a big
 * frame, so the loop thread only applies the result. Limits are copied from
 * the config on the loop thread (nsrv_processor_prep_limits) because the
 * config may change there meanwhile.
 */
typedef struct {
    nsrv_register_body_limits_t reg;
} nsrv_prep_limits_t;

typedef struct {
    bool has_register; /* a REGISTER_BROKER was prepared: the fields below are set */
    bool crc_mismatch; /* bodyCrc32 given and not the body's */
    int register_rc;   /* nsrv_register_body_decode_bounded's result */
    char register_err[256];
    nsrv_register_body_t register_body; /* in the arena given to prepare, if register_rc is 0 */
    bool nul_checked;                   /* nul below is nsrv_cmd_find_nul(req) */
    const nsrv_ext_field_t *nul;
    char *kv_value; /* PUT_KV_CONFIG: the value's stored form (nsrv_kv_value_make), or NULL */
    size_t kv_value_len;
} nsrv_proc_prep_t;

/* The config's current limits, for a prepare that runs elsewhere. Loop thread. */
void nsrv_processor_prep_limits(const nsrv_processor_t *p, nsrv_prep_limits_t *out);
/* Prepares req (decoded into arena, which then also holds the result). Any thread:
 * reads only req, lim and arena. Sets out->has_register only for REGISTER_BROKER. */
void nsrv_processor_prepare(const nsrv_prep_limits_t *lim, const nsrv_cmd_t *req,
                            nsrv_arena_t *arena, nsrv_proc_prep_t *out);
/* Releases what a prepare made and the handler did not take over. */
void nsrv_processor_prep_release(nsrv_proc_prep_t *prep);
/* nsrv_processor_handle with req's prepared part already done (prep NULL: done inline).
 * The handler may take over parts of prep (then NULL in it). */
bool nsrv_processor_handle_prepared(nsrv_processor_t *p, const nsrv_cmd_t *req,
                                    nsrv_proc_prep_t *prep, uint64_t conn_id,
                                    const struct sockaddr *peer, uint64_t now_ms,
                                    nsrv_arena_t *arena, nsrv_buf_t *body_out, nsrv_cmd_t *resp);

/*
 * Pending reply slots, for handlers whose answer waits on other work (today:
 * a durable write). The server owns the slots. A slot holds the place of one
 * reply in its connection's reply order: replies to later requests on that
 * connection wait behind it (never overtake it), other connections are not
 * affected. Loop thread only.
 */
typedef struct nsrv_reply_slot nsrv_reply_slot_t;
typedef struct {
    /* Reserves the slot for the reply to the request being handled on conn_id. */
    nsrv_reply_slot_t *(*reserve)(void *ud, uint64_t conn_id);
    /* Fills the slot with resp (encoded at once) and sends what it held back. If
     * the connection closed meanwhile the slot is just freed. Never call it
     * from inside nsrv_processor_handle. */
    void (*fill)(void *ud, nsrv_reply_slot_t *slot, const nsrv_cmd_t *resp);
    void *ud;
} nsrv_reply_host_t;

/* What the durable host can write. */
typedef enum { NSRV_DURABLE_KV, NSRV_DURABLE_CONFIG } nsrv_durable_target_t;

/* A durable write's outcome: 0 once on disk, or -errno. Loop thread. */
typedef void (*nsrv_durable_done_t)(void *ud, int rc);

typedef struct {
    /* Requests a durable write of target's current content; done runs later
     * (never inside this call). Returns false if the host does not write
     * target: the processor then persists synchronously itself. */
    bool (*persist)(void *ud, nsrv_durable_target_t target, nsrv_durable_done_t done,
                    void *done_ud);
    void *ud;
} nsrv_durable_host_t;

/*
 * Makes KV and config writes asynchronous: the handler changes memory, asks
 * durable for the write, and replies through a reserved slot once it is
 * durable (or failed: SYSTEM_ERROR with the reason). Both hosts are copied.
 */
void nsrv_processor_set_async(nsrv_processor_t *p, const nsrv_reply_host_t *replies,
                              const nsrv_durable_host_t *durable);

/* Called for every UNREGISTER_BROKER a broker sends, before it is applied
 * (gossip spreads it as a tombstone). fn NULL disables it. */
typedef void (*nsrv_unregister_hook_t)(void *ud, const char *cluster, const char *addr,
                                       const char *name, int64_t id);
void nsrv_processor_set_unregister_hook(nsrv_processor_t *p, nsrv_unregister_hook_t fn, void *ud);

/* The configuration changed under the processor (a failed write rolled it back): the
 * settings it copies from it (the route switches) are taken again. */
void nsrv_processor_config_changed(nsrv_processor_t *p);

/* Installs the access policy (allow lists, signatures, the UPDATE switch),
 * taking ownership; the previous one is destroyed. NULL: everything open. */
void nsrv_processor_set_acl(nsrv_processor_t *p, nsrv_acl_t *acl);
