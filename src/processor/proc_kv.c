/* SPDX-License-Identifier: Apache-2.0 */
/* KV config requests: PUT (100), GET (101), DELETE (102), GET_KVLIST_BY_NAMESPACE (219). */
#include <string.h>

#include "nsrv/kv.h"
#include "nsrv/log.h"
#include "proc_int.h"

void proc_put_kv_config(proc_ctx_t *ctx) {
    const char *ns = proc_ext(ctx, "namespace");
    const char *key = proc_ext(ctx, "key");
    if (!ns || !key) {
        proc_set_code(ctx, NSRV_RESP_SYSTEM_ERROR, "namespace or key is null");
        return;
    }
    int rc = nsrv_kv_put(ctx->p->kv, ns, key, proc_ext(ctx, "value"));
    if (rc < 0) {
        /* Java logs and answers SUCCESS; an operator is better served by an error. */
        nsrv_log_error("KV", "persisting kv config failed: %s", strerror(-rc));
        proc_set_remarkf(ctx, NSRV_RESP_SYSTEM_ERROR, "persist kv config failed: %s",
                         strerror(-rc));
    }
}

void proc_get_kv_config(proc_ctx_t *ctx) {
    const char *ns = proc_ext(ctx, "namespace");
    const char *key = proc_ext(ctx, "key");
    const char *value = (ns && key) ? nsrv_kv_get(ctx->p->kv, ns, key) : NULL;
    proc_use_ext(ctx); /* GetKVConfigResponseHeader: ext is present even when empty */
    if (value) {
        proc_add_ext(ctx, "value", value);
        return;
    }
    proc_set_remarkf(ctx, NSRV_RESP_QUERY_NOT_FOUND, "No config item, Namespace: %s Key: %s",
                     ns ? ns : "null", key ? key : "null");
}

void proc_delete_kv_config(proc_ctx_t *ctx) {
    const char *ns = proc_ext(ctx, "namespace");
    const char *key = proc_ext(ctx, "key");
    int rc = nsrv_kv_delete(ctx->p->kv, ns ? ns : "", key ? key : "");
    if (rc < 0) {
        nsrv_log_error("KV", "persisting kv config failed: %s", strerror(-rc));
        proc_set_remarkf(ctx, NSRV_RESP_SYSTEM_ERROR, "persist kv config failed: %s",
                         strerror(-rc));
    }
}

void proc_get_kv_list(proc_ctx_t *ctx) {
    const char *ns = proc_ext(ctx, "namespace");
    if (ns && nsrv_kv_encode_namespace(ctx->p->kv, ns, ctx->body)) {
        proc_use_body(ctx);
        return;
    }
    proc_set_remarkf(ctx, NSRV_RESP_QUERY_NOT_FOUND, "No config item, Namespace: %s",
                     ns ? ns : "null");
}
