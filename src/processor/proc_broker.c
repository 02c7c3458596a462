/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Broker-side requests: REGISTER_BROKER, UNREGISTER_BROKER, QUERY_DATA_VERSION,
 * BROKER_HEARTBEAT. The last three count as
 * heartbeats (proto/requests.md §2.4, §2.7).
 */
#include <inttypes.h>
#include <string.h>

#include "nsrv/config.h"
#include "nsrv/kv.h"
#include "nsrv/log.h"
#include "nsrv/register_body.h"
#include "nsrv/route.h"
#include "nsrv/text.h"
#include "proc_int.h"

#define ORDER_TOPIC_NS "ORDER_TOPIC_CONFIG"
/* MQVersion V3_0_11: older brokers send a bare TopicConfigSerializeWrapper. */

static bool broker_identity(nsrv_proc_ctx_t *ctx, const char **cluster, const char **addr,
                            const char **name) {
    *cluster = nsrv_proc_ext(ctx, "clusterName");
    *addr = nsrv_proc_ext(ctx, "brokerAddr");
    *name = nsrv_proc_ext(ctx, "brokerName");
    return *cluster && *addr && *name;
}

void nsrv__proc_prepare_register(const nsrv_prep_limits_t *lim, const nsrv_cmd_t *req,
                                 nsrv_arena_t *arena, nsrv_proc_prep_t *out) {
    out->has_register = true;
    out->crc_mismatch = false;
    out->register_err[0] = '\0';
    int64_t crc = 0;
    nsrv_str_t crc_text = nsrv_cmd_ext(req, "bodyCrc32");
    if (crc_text.ptr && nsrv_parse_int(crc_text.ptr, crc_text.len, INT64_MIN, INT64_MAX, &crc) &&
        crc != 0 && (int64_t)nsrv_body_crc32(req->body, req->body_len) != crc) {
        out->crc_mismatch = true;
        return;
    }
    nsrv_str_t compressed = nsrv_cmd_ext(req, "compressed");
    out->register_rc = nsrv_register_body_decode_bounded(
        req->body, req->body_len, req->version,
        compressed.ptr && strcasecmp(compressed.ptr, "true") == 0, &lim->reg, arena,
        &out->register_body, out->register_err, sizeof out->register_err);
}

void nsrv_proc_register_broker(nsrv_proc_ctx_t *ctx) {
    nsrv_proc_use_ext(ctx); /* RegisterBrokerResponseHeader */
    nsrv_proc_prep_t inline_prep;
    const nsrv_proc_prep_t *prep = ctx->prep;
    if (!prep || !prep->has_register) {
        nsrv_prep_limits_t lim;
        nsrv_processor_prep_limits(ctx->p, &lim);
        nsrv__proc_prepare_register(&lim, ctx->req, ctx->arena, &inline_prep);
        prep = &inline_prep;
    }
    if (prep->crc_mismatch) {
        nsrv_proc_set_code(ctx, NSRV_RESP_SYSTEM_ERROR, "crc32 not match");
        return;
    }
    const char *cluster, *addr, *name;
    if (!broker_identity(ctx, &cluster, &addr, &name)) {
        /* Java swallows the NPE and answers SUCCESS without registering; say what is wrong. */
        nsrv_proc_set_code(
            ctx, NSRV_RESP_SYSTEM_ERROR,
            "register broker failed: brokerName, brokerAddr and clusterName are required");
        return;
    }
    if (prep->register_rc != 0) {
        /* Java throws here, so its reply is the generic error one: no extFields. */
        ctx->resp->has_ext = false;
        nsrv_proc_set_remarkf(ctx, NSRV_RESP_SYSTEM_ERROR, "%s", prep->register_err);
        return;
    }
    nsrv_register_body_t body = prep->register_body;
    nsrv_register_req_t r = {0};
    r.cluster = cluster;
    r.broker_addr = addr;
    r.broker_name = name;
    r.ha_server_addr = nsrv_proc_ext(ctx, "haServerAddr");
    if (!r.ha_server_addr)
        r.ha_server_addr = "";
    r.zone_name = nsrv_proc_ext(ctx, "__ZONE_NAME");
    int64_t v = 0;
    r.broker_id = nsrv_proc_ext_i64(ctx, "brokerId", &v) ? v : 0;
    r.timeout_ms = nsrv_proc_ext_i64(ctx, "heartbeatTimeoutMillis", &v) && v > 0 ? v : 0;
    const char *am = nsrv_proc_ext(ctx, "enableActingMaster");
    r.acting_master = am ? (strcasecmp(am, "true") == 0 ? 1 : 0) : -1;
    r.body = &body;
    r.conn_id = ctx->conn_id;

    nsrv_register_result_t res;
    nsrv_route_register_broker(ctx->p->rt, &r, ctx->now_ms, &res);
    if (res.status != NSRV_REG_OK) {
        nsrv_proc_set_code(ctx, NSRV_RESP_SYSTEM_ERROR, "register broker failed");
        return;
    }
    if (res.ha_server_addr[0])
        nsrv_proc_add_ext(ctx, "haServerAddr", res.ha_server_addr);
    if (res.master_addr[0])
        nsrv_proc_add_ext(ctx, "masterAddr", res.master_addr);
    if (ctx->p->cfg->return_order_topic_config_to_broker &&
        nsrv_kv_encode_namespace(ctx->p->kv, ORDER_TOPIC_NS, ctx->body))
        nsrv_proc_use_body(ctx);
}

void nsrv_proc_unregister_broker(nsrv_proc_ctx_t *ctx) {
    const char *cluster, *addr, *name;
    if (!broker_identity(ctx, &cluster, &addr, &name))
        return; /* nothing can match; Java answers SUCCESS as well */
    int64_t id = 0;
    nsrv_proc_ext_i64(ctx, "brokerId", &id);
    if (ctx->p->unregister_hook)
        ctx->p->unregister_hook(ctx->p->unregister_ud, cluster, addr, name, id);
    nsrv_route_unregister_broker(ctx->p->rt, cluster, addr, name, id);
}

static void encode_data_version(const nsrv_data_version_t *dv, nsrv_buf_t *out) {
    nsrv_buf_printf(
        out, "{\"counter\":%" PRId64 ",\"stateVersion\":%" PRId64 ",\"timestamp\":%" PRId64 "}",
        dv->counter, dv->state_version, dv->timestamp);
}

void nsrv_proc_query_data_version(nsrv_proc_ctx_t *ctx) {
    const char *cluster = nsrv_proc_ext(ctx, "clusterName");
    const char *addr = nsrv_proc_ext(ctx, "brokerAddr");
    nsrv_data_version_t incoming, stored;
    bool has_incoming =
        ctx->req->body_len > 0 &&
        nsrv_data_version_decode(ctx->req->body, ctx->req->body_len, ctx->arena, &incoming) == 0;
    bool has_stored = false;
    bool changed = true;
    if (cluster && addr)
        changed = nsrv_route_query_data_version(ctx->p->rt, cluster, addr,
                                                has_incoming ? &incoming : NULL, ctx->now_ms,
                                                &stored, &has_stored);
    nsrv_proc_add_ext(ctx, "changed", changed ? "true" : "false");
    if (has_stored) {
        encode_data_version(&stored, ctx->body);
        nsrv_proc_use_body(ctx);
    }
}

void nsrv_proc_broker_heartbeat(nsrv_proc_ctx_t *ctx) {
    const char *cluster = nsrv_proc_ext(ctx, "clusterName");
    const char *addr = nsrv_proc_ext(ctx, "brokerAddr");
    if (cluster && addr)
        nsrv_route_broker_heartbeat(ctx->p->rt, cluster, addr, ctx->now_ms);
}
