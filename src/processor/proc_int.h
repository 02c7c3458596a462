/* SPDX-License-Identifier: Apache-2.0 */
/* Private to the processor module: the handler context and reply helpers. */
#pragma once

#include "nsrv/arena.h"
#include "nsrv/buf.h"
#include "nsrv/processor.h"
#include "nsrv/remoting.h"

struct nsrv_processor {
    struct nsrv_config *cfg;
    nsrv_route_t *rt;
    nsrv_kv_t *kv;
    uint64_t start_ms;
    nsrv_unregister_hook_t unregister_hook;
    void *unregister_ud;
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
} proc_ctx_t;

typedef void (*proc_handler_t)(proc_ctx_t *ctx);

#define X(code, name, handler) void handler(proc_ctx_t *ctx);
#include "request_codes.def"
#undef X

/* Pushes the route-related config (supportActingMaster, ...) into the route table. */
void nsrv__processor_apply_route_opts(nsrv_processor_t *p);

/* Ext value as a NUL-terminated string, or NULL if absent. */
const char *proc_ext(const proc_ctx_t *ctx, const char *key);
/* Java's Long.parseLong / Boolean.parseBoolean semantics: false if absent or malformed. */
bool proc_ext_i64(const proc_ctx_t *ctx, const char *key, int64_t *out);
bool proc_ext_true(const proc_ctx_t *ctx, const char *key);

void proc_set_code(proc_ctx_t *ctx, int32_t code, const char *remark);
void proc_set_remarkf(proc_ctx_t *ctx, int32_t code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Adds an ext field to the response (strings copied into the arena). Marks has_ext. */
void proc_add_ext(proc_ctx_t *ctx, const char *key, const char *val);
/* Marks the response as carrying an (empty) extFields object: Java's response headers. */
void proc_use_ext(proc_ctx_t *ctx);
/* Uses ctx->body as the response body. */
void proc_use_body(proc_ctx_t *ctx);
