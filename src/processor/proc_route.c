/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Route, topic list, broker permission and member group requests (proto/requests.md §2.8-§2.17,
 * §2.20).
 */
#include <string.h>

#include "nsrv/config.h"
#include "nsrv/json.h"
#include "nsrv/kv.h"
#include "nsrv/mq_version.h"
#include "nsrv/register_body.h"
#include "nsrv/route.h"
#include "nsrv/text.h"
#include "proc_int.h"

#define ORDER_TOPIC_NS "ORDER_TOPIC_CONFIG"

bool nsrv__proc_route_ready(const nsrv_processor_t *p, uint64_t now_ms) {
    const struct nsrv_config *cfg = p->cfg;
    return !cfg->need_wait_for_service ||
           now_ms - p->start_ms >= (uint64_t)cfg->wait_seconds_for_service * 1000u;
}

int nsrv__proc_route_body(nsrv_processor_t *p, const char *topic, bool standard, const char *zone,
                          uint64_t now_ms, nsrv_cmd_t *resp) {
    const char *order_conf = NULL;
    if (p->cfg->order_message_enable)
        order_conf = nsrv_kv_get(p->kv, ORDER_TOPIC_NS, topic);
    nsrv_route_json_t mode = standard ? NSRV_ROUTE_JSON_STANDARD : NSRV_ROUTE_JSON_DEFAULT;
    const char *body = NULL;
    size_t len = 0;
    nsrv_rcbuf_t *shared = NULL;
    int rc = nsrv_route_topic_route_shared(p->rt, topic, mode, order_conf, zone, now_ms, &body,
                                           &len, &shared);
    if (rc == 0) {
        resp->body = (const uint8_t *)body;
        resp->body_len = len;
        resp->body_rc = shared; /* the connection sends it without a copy */
    }
    return rc;
}

void nsrv_proc_get_route_info(nsrv_proc_ctx_t *ctx) {
    if (!nsrv__proc_route_ready(ctx->p, ctx->now_ms)) {
        nsrv_proc_set_code(ctx, NSRV_RESP_SYSTEM_ERROR, "name server not ready");
        return;
    }
    const char *topic = nsrv_proc_ext(ctx, "topic");
    bool standard =
        ctx->req->version >= NSRV_MQ_V4_9_4 || nsrv_proc_ext_true(ctx, "acceptStandardJsonOnly");
    const char *zone = NULL;
    if (nsrv_proc_ext_true(ctx, "__ZONE_MODE") &&
        !nsrv_is_blank_c(nsrv_proc_ext(ctx, "__ZONE_NAME")))
        zone = nsrv_proc_ext(ctx, "__ZONE_NAME");
    if (topic && nsrv__proc_route_body(ctx->p, topic, standard, zone, ctx->now_ms, ctx->resp) == 0)
        return;
    nsrv_proc_set_remarkf(
        ctx, NSRV_RESP_TOPIC_NOT_EXIST,
        "No topic route info in name server for the topic: %s\n"
        "See https://rocketmq.apache.org/docs/bestPractice/06FAQ for further details.",
        topic ? topic : "null");
}

void nsrv_proc_get_cluster_info(nsrv_proc_ctx_t *ctx) {
    nsrv_route_cluster_info(ctx->p->rt, ctx->now_ms, ctx->body);
    nsrv_proc_use_body(ctx);
}

static void perm_change(nsrv_proc_ctx_t *ctx, bool wipe) {
    const char *name = nsrv_proc_ext(ctx, "brokerName");
    int count = 0;
    if (name)
        count = wipe ? nsrv_route_wipe_write_perm(ctx->p->rt, name)
                     : nsrv_route_add_write_perm(ctx->p->rt, name);
    char num[16];
    snprintf(num, sizeof num, "%d", count);
    nsrv_proc_add_ext(ctx, wipe ? "wipeTopicCount" : "addTopicCount", num);
}

void nsrv_proc_wipe_write_perm(nsrv_proc_ctx_t *ctx) {
    perm_change(ctx, true);
}

void nsrv_proc_add_write_perm(nsrv_proc_ctx_t *ctx) {
    perm_change(ctx, false);
}

static bool list_enabled(nsrv_proc_ctx_t *ctx, bool enabled) {
    if (!enabled)
        nsrv_proc_set_code(ctx, NSRV_RESP_SYSTEM_ERROR, "disable");
    return enabled;
}

static void topic_list(nsrv_proc_ctx_t *ctx, bool enabled, nsrv_topic_filter_t f) {
    if (!list_enabled(ctx, enabled))
        return;
    nsrv_route_topic_list(ctx->p->rt, f, ctx->now_ms, ctx->body);
    nsrv_proc_use_body(ctx);
}

void nsrv_proc_get_all_topic_list(nsrv_proc_ctx_t *ctx) {
    topic_list(ctx, ctx->p->cfg->enable_all_topic_list, NSRV_TOPICS_ALL);
}

void nsrv_proc_get_unit_topic_list(nsrv_proc_ctx_t *ctx) {
    topic_list(ctx, ctx->p->cfg->enable_topic_list, NSRV_TOPICS_UNIT);
}

void nsrv_proc_get_unit_sub_topic_list(nsrv_proc_ctx_t *ctx) {
    topic_list(ctx, ctx->p->cfg->enable_topic_list, NSRV_TOPICS_UNIT_SUB);
}

void nsrv_proc_get_unit_sub_ununit_topic_list(nsrv_proc_ctx_t *ctx) {
    topic_list(ctx, ctx->p->cfg->enable_topic_list, NSRV_TOPICS_UNIT_SUB_NOT_UNIT);
}

void nsrv_proc_get_topics_by_cluster(nsrv_proc_ctx_t *ctx) {
    if (!list_enabled(ctx, ctx->p->cfg->enable_topic_list))
        return;
    const char *cluster = nsrv_proc_ext(ctx, "cluster");
    nsrv_route_topics_by_cluster(ctx->p->rt, cluster ? cluster : "", ctx->now_ms, ctx->body);
    nsrv_proc_use_body(ctx);
}

void nsrv_proc_get_system_topic_list(nsrv_proc_ctx_t *ctx) {
    nsrv_route_system_topic_list(ctx->p->rt, ctx->now_ms, ctx->body);
    nsrv_proc_use_body(ctx);
}

void nsrv_proc_delete_topic(nsrv_proc_ctx_t *ctx) {
    const char *topic = nsrv_proc_ext(ctx, "topic");
    if (topic)
        nsrv_route_delete_topic(ctx->p->rt, topic, nsrv_proc_ext(ctx, "clusterName"));
}

void nsrv_proc_register_topic(nsrv_proc_ctx_t *ctx) {
    const char *topic = nsrv_proc_ext(ctx, "topic");
    nsrv_queue_data_t *qds = NULL;
    size_t n = 0;
    char err[128];
    err[0] = '\0';
    if (!topic || nsrv_topic_route_queue_datas_decode(ctx->req->body, ctx->req->body_len,
                                                      ctx->arena, &qds, &n, err, sizeof err) != 0) {
        /* Java: a body it cannot use changes nothing and still answers
         * SUCCESS. A NUL in a name is refused with an error on every path
         * (proto/remoting.md §6a), so that one case is reported. */
        if (strstr(err, NSRV_JSON_ERR_NUL))
            nsrv_proc_set_remarkf(ctx, NSRV_RESP_SYSTEM_ERROR, "%s", err);
        return;
    }
    if (n > 0)
        nsrv_route_register_topic(ctx->p->rt, topic, qds, n);
}

void nsrv_proc_get_member_group(nsrv_proc_ctx_t *ctx) {
    const char *cluster = nsrv_proc_ext(ctx, "clusterName");
    const char *name = nsrv_proc_ext(ctx, "brokerName");
    nsrv_route_member_group(ctx->p->rt, cluster, name, ctx->now_ms, ctx->body);
    nsrv_proc_use_body(ctx);
    /* Java builds this reply with createResponseCommand(null), whose default
     * remark survives the later setCode(SUCCESS). */
    nsrv_proc_set_code(ctx, NSRV_RESP_SUCCESS, "not set any response code");
}
