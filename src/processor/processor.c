/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Request dispatch (the [code] -> handler table below; the codes are
 * proto/request_codes.def) and the reply helpers shared by the handler files
 * proc_*.c.
 */
#include "nsrv/processor.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nsrv/alloc.h"
#include "nsrv/config.h"
#include "nsrv/kv.h"
#include "nsrv/text.h"
#include "nsrv/utf8.h"
#include "proc_int.h"

nsrv_processor_t *nsrv_processor_create(struct nsrv_config *cfg, nsrv_route_t *rt, nsrv_kv_t *kv,
                                        uint64_t start_ms) {
    nsrv_processor_t *p = nsrv_calloc(1, sizeof *p);
    p->cfg = cfg;
    p->rt = rt;
    p->kv = kv;
    p->start_ms = start_ms;
    nsrv__processor_apply_route_opts(p);
    nsrv__proc_route_fast_init(p);
    return p;
}

void nsrv_processor_destroy(nsrv_processor_t **p) {
    if (p && *p) {
        nsrv_acl_destroy(&(*p)->acl);
        nsrv_free(*p);
        *p = NULL;
    }
}

void nsrv_processor_set_unregister_hook(nsrv_processor_t *p, nsrv_unregister_hook_t fn, void *ud) {
    p->unregister_hook = fn;
    p->unregister_ud = ud;
}

/* [code] -> handler; codes nsrvd does not serve are NULL. Every code of
 * proto/request_codes.def has an entry (test_processor_table checks). */
static const nsrv_proc_handler_t HANDLERS[] = {
    [NSRV_REQ_PUT_KV_CONFIG] = nsrv_proc_put_kv_config,
    [NSRV_REQ_GET_KV_CONFIG] = nsrv_proc_get_kv_config,
    [NSRV_REQ_DELETE_KV_CONFIG] = nsrv_proc_delete_kv_config,
    [NSRV_REQ_REGISTER_BROKER] = nsrv_proc_register_broker,
    [NSRV_REQ_UNREGISTER_BROKER] = nsrv_proc_unregister_broker,
    [NSRV_REQ_GET_ROUTEINFO_BY_TOPIC] = nsrv_proc_get_route_info,
    [NSRV_REQ_GET_BROKER_CLUSTER_INFO] = nsrv_proc_get_cluster_info,
    [NSRV_REQ_WIPE_WRITE_PERM_OF_BROKER] = nsrv_proc_wipe_write_perm,
    [NSRV_REQ_GET_ALL_TOPIC_LIST_FROM_NAMESERVER] = nsrv_proc_get_all_topic_list,
    [NSRV_REQ_DELETE_TOPIC_IN_NAMESRV] = nsrv_proc_delete_topic,
    [NSRV_REQ_REGISTER_TOPIC_IN_NAMESRV] = nsrv_proc_register_topic,
    [NSRV_REQ_GET_KVLIST_BY_NAMESPACE] = nsrv_proc_get_kv_list,
    [NSRV_REQ_GET_TOPICS_BY_CLUSTER] = nsrv_proc_get_topics_by_cluster,
    [NSRV_REQ_GET_SYSTEM_TOPIC_LIST_FROM_NS] = nsrv_proc_get_system_topic_list,
    [NSRV_REQ_GET_UNIT_TOPIC_LIST] = nsrv_proc_get_unit_topic_list,
    [NSRV_REQ_GET_HAS_UNIT_SUB_TOPIC_LIST] = nsrv_proc_get_unit_sub_topic_list,
    [NSRV_REQ_GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST] = nsrv_proc_get_unit_sub_ununit_topic_list,
    [NSRV_REQ_UPDATE_NAMESRV_CONFIG] = nsrv_proc_update_config,
    [NSRV_REQ_GET_NAMESRV_CONFIG] = nsrv_proc_get_config,
    [NSRV_REQ_QUERY_DATA_VERSION] = nsrv_proc_query_data_version,
    [NSRV_REQ_ADD_WRITE_PERM_OF_BROKER] = nsrv_proc_add_write_perm,
    [NSRV_REQ_GET_BROKER_MEMBER_GROUP] = nsrv_proc_get_member_group,
    [NSRV_REQ_BROKER_HEARTBEAT] = nsrv_proc_broker_heartbeat,
};

void nsrv_processor_set_async(nsrv_processor_t *p, const nsrv_reply_host_t *replies,
                              const nsrv_durable_host_t *durable) {
    p->replies = *replies;
    p->durable = *durable;
    p->async = true;
}

nsrv_proc_handler_t nsrv__processor_find_handler(int32_t code) {
    if (code < 0 || (size_t)code >= NSRV_ARRAY_LEN(HANDLERS))
        return NULL;
    return HANDLERS[code];
}

void nsrv_proc_init_response(const nsrv_cmd_t *req, nsrv_cmd_t *resp) {
    /* Mirrors the request's serialize type, as 4.9.x does (proto/remoting.md §5). */
    nsrv_cmd_init_response(resp, req, NSRV_RESP_SUCCESS);
}

void nsrv_processor_prep_limits(const nsrv_processor_t *p, nsrv_prep_limits_t *out) {
    out->reg.max_topics = (size_t)p->cfg->register_max_topics;
    out->reg.max_decoded_bytes = (size_t)p->cfg->register_max_decoded_bytes;
}

void nsrv_processor_prepare(const nsrv_prep_limits_t *lim, const nsrv_cmd_t *req,
                            nsrv_arena_t *arena, nsrv_proc_prep_t *out) {
    memset(out, 0, sizeof *out);
    out->nul_checked = true;
    out->nul = nsrv_cmd_find_nul(req);
    if (out->nul || (req->flag & NSRV_FLAG_RESPONSE))
        return; /* refused, or not run at all */
    if (req->code == NSRV_REQ_REGISTER_BROKER)
        nsrv__proc_prepare_register(lim, req, arena, out);
    if (req->code == NSRV_REQ_PUT_KV_CONFIG) {
        nsrv_str_t v = nsrv_cmd_ext(req, "value");
        if (v.ptr) {
            out->kv_value = nsrv_kv_value_make(v.ptr, v.len);
            out->kv_value_len = v.len;
        }
    }
}

void nsrv_processor_prep_release(nsrv_proc_prep_t *prep) {
    nsrv_kv_value_release(prep->kv_value);
    prep->kv_value = NULL;
}

bool nsrv_processor_handle(nsrv_processor_t *p, const nsrv_cmd_t *req, uint64_t conn_id,
                           const struct sockaddr *peer, uint64_t now_ms, nsrv_arena_t *arena,
                           nsrv_buf_t *body_out, nsrv_cmd_t *resp) {
    return nsrv_processor_handle_prepared(p, req, NULL, conn_id, peer, now_ms, arena, body_out,
                                          resp);
}

bool nsrv_processor_handle_prepared(nsrv_processor_t *p, const nsrv_cmd_t *req,
                                    nsrv_proc_prep_t *prep, uint64_t conn_id,
                                    const struct sockaddr *peer, uint64_t now_ms,
                                    nsrv_arena_t *arena, nsrv_buf_t *body_out, nsrv_cmd_t *resp) {
    nsrv_proc_init_response(req, resp);
    nsrv_buf_reset(body_out);
    nsrv_proc_ctx_t ctx = {p, req, resp, arena, body_out, conn_id, now_ms, false, prep};
    const nsrv_ext_field_t *nul = prep && prep->nul_checked ? prep->nul : nsrv_cmd_find_nul(req);
    if (nul) {
        /* Names are C strings here: serving "a\0b" as "a" would let two
         * distinct names share state, so every path refuses NUL alike. */
        bool in_key = memchr(nul->key.ptr, '\0', nul->key.len) != NULL;
        nsrv_proc_set_remarkf(&ctx, NSRV_RESP_SYSTEM_ERROR,
                              "invalid request: the %s of extFields entry \"%s\" contains a NUL "
                              "character (U+0000), which names and values may not contain",
                              in_key ? "key" : "value", nul->key.ptr);
        return false;
    }
    nsrv_proc_handler_t h = nsrv__processor_find_handler(req->code);
    if (h && !nsrv__proc_acl_permits(&ctx, peer))
        return false;
    if (h) {
        h(&ctx);
        return ctx.deferred;
    }
    /* 5.x answers unknown codes (4.9.x stays silent); note the leading space. */
    nsrv_proc_set_remarkf(&ctx, NSRV_RESP_REQUEST_CODE_NOT_SUPPORTED,
                          " request type %" PRId32 " not supported", req->code);
    return false;
}

bool nsrv_proc_ext_i64(const nsrv_proc_ctx_t *ctx, const char *key, int64_t *out) {
    const char *v = nsrv_proc_ext(ctx, key);
    return v && nsrv_parse_int(v, strlen(v), INT64_MIN, INT64_MAX, out);
}

bool nsrv_proc_ext_true(const nsrv_proc_ctx_t *ctx, const char *key) {
    const char *v = nsrv_proc_ext(ctx, key);
    return v && strcasecmp(v, "true") == 0;
}

void nsrv_proc_set_code(nsrv_proc_ctx_t *ctx, int32_t code, const char *remark) {
    ctx->resp->code = code;
    ctx->resp->remark = remark ? nsrv_str_c(remark) : NSRV_STR_NULL;
}

/* Remarks echo request strings; a bound keeps a 16 MiB topic name out of replies. */
#define PROC_REMARK_MAX 1023

void nsrv_proc_set_remarkf(nsrv_proc_ctx_t *ctx, int32_t code, const char *fmt, ...) {
    char tmp[PROC_REMARK_MAX + 1];
    va_list ap, ap2;
    va_start(ap, fmt);
    va_copy(ap2, ap);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    const char *text = tmp;
    if (n < 0) {
        n = 0;
    } else if ((size_t)n >= sizeof tmp) {
        /* Format it whole so that the cut can see the character it splits. */
        char *whole = nsrv_arena_alloc(ctx->arena, (size_t)n + 1);
        vsnprintf(whole, (size_t)n + 1, fmt, ap2);
        text = whole;
    }
    va_end(ap2);
    size_t len = nsrv_utf8_trunc_len(text, (size_t)n, PROC_REMARK_MAX);
    ctx->resp->code = code;
    /* Arguments are valid UTF-8 (decoded requests, our own texts); a
     * replacement pass keeps the reply valid even if one was not. */
    ctx->resp->remark.ptr = nsrv_utf8_arena_dup(ctx->arena, text, len, &ctx->resp->remark.len);
}

#define PROC_MAX_EXT 8

void nsrv_proc_use_ext(nsrv_proc_ctx_t *ctx) {
    if (!ctx->resp->has_ext) {
        ctx->resp->has_ext = true;
        ctx->resp->ext = nsrv_arena_alloc(ctx->arena, PROC_MAX_EXT * sizeof(nsrv_ext_field_t));
        ctx->resp->n_ext = 0;
    }
}

void nsrv_proc_add_ext(nsrv_proc_ctx_t *ctx, const char *key, const char *val) {
    nsrv_proc_use_ext(ctx);
    NSRV_REQUIRE(ctx->resp->n_ext < PROC_MAX_EXT);
    nsrv_ext_field_t *f = &ctx->resp->ext[ctx->resp->n_ext++];
    size_t kl = strlen(key), vl = strlen(val);
    f->key.ptr = nsrv_arena_strndup(ctx->arena, key, kl);
    f->key.len = kl;
    f->val.ptr = nsrv_arena_strndup(ctx->arena, val, vl);
    f->val.len = vl;
}

void nsrv_proc_use_body(nsrv_proc_ctx_t *ctx) {
    ctx->resp->body = (const uint8_t *)ctx->body->data;
    ctx->resp->body_len = ctx->body->len;
}
