/* SPDX-License-Identifier: Apache-2.0 */
/* KV config requests: PUT, GET and DELETE_KV_CONFIG, GET_KVLIST_BY_NAMESPACE. */
#include <string.h>

#include "nsrv/kv.h"
#include "nsrv/log.h"
#include "proc_int.h"

/* The reply to a KV change (rc from nsrv_kv_put or nsrv_kv_delete). */
static void reply_kv_changed(nsrv_proc_ctx_t *ctx, int rc) {
    if (rc < 0) {
        /* Java logs and answers SUCCESS; an operator is better served by an error. */
        nsrv_log_error("KV", "persisting kv config failed: %s", strerror(-rc));
        nsrv_proc_set_remarkf(ctx, NSRV_RESP_SYSTEM_ERROR, "persist kv config failed: %s",
                              strerror(-rc));
        return;
    }
    /* With the server's writer thread, the table changed in memory only: reply once on disk. */
    nsrv_proc_defer_until_durable(ctx, NSRV_DURABLE_KV, "kv config");
}

void nsrv_proc_put_kv_config(nsrv_proc_ctx_t *ctx) {
    const char *ns = nsrv_proc_ext(ctx, "namespace");
    const char *key = nsrv_proc_ext(ctx, "key");
    if (!ns || !key) {
        nsrv_proc_set_code(ctx, NSRV_RESP_SYSTEM_ERROR, "namespace or key is null");
        return;
    }
    nsrv_proc_prep_t *prep = ctx->prep;
    if (prep && prep->kv_value) {
        /* Made on a worker with the frame's decode: the loop only links it in. */
        char *made = prep->kv_value;
        prep->kv_value = NULL;
        reply_kv_changed(ctx, nsrv_kv_put_value(ctx->p->kv, ns, key, made, prep->kv_value_len));
        return;
    }
    reply_kv_changed(ctx, nsrv_kv_put(ctx->p->kv, ns, key, nsrv_proc_ext(ctx, "value")));
}

void nsrv_proc_get_kv_config(nsrv_proc_ctx_t *ctx) {
    const char *ns = nsrv_proc_ext(ctx, "namespace");
    const char *key = nsrv_proc_ext(ctx, "key");
    const char *value = (ns && key) ? nsrv_kv_get(ctx->p->kv, ns, key) : NULL;
    nsrv_proc_use_ext(ctx); /* GetKVConfigResponseHeader: ext is present even when empty */
    if (value) {
        nsrv_proc_add_ext(ctx, "value", value);
        return;
    }
    nsrv_proc_set_remarkf(ctx, NSRV_RESP_QUERY_NOT_FOUND, "No config item, Namespace: %s Key: %s",
                          ns ? ns : "null", key ? key : "null");
}

void nsrv_proc_delete_kv_config(nsrv_proc_ctx_t *ctx) {
    const char *ns = nsrv_proc_ext(ctx, "namespace");
    const char *key = nsrv_proc_ext(ctx, "key");
    reply_kv_changed(ctx, nsrv_kv_delete(ctx->p->kv, ns ? ns : "", key ? key : ""));
}

void nsrv_proc_get_kv_list(nsrv_proc_ctx_t *ctx) {
    const char *ns = nsrv_proc_ext(ctx, "namespace");
    if (ns && nsrv_kv_encode_namespace(ctx->p->kv, ns, ctx->body)) {
        nsrv_proc_use_body(ctx);
        return;
    }
    nsrv_proc_set_remarkf(ctx, NSRV_RESP_QUERY_NOT_FOUND, "No config item, Namespace: %s",
                          ns ? ns : "null");
}
