/* SPDX-License-Identifier: Apache-2.0 */
/* UPDATE_NAMESRV_CONFIG and GET_NAMESRV_CONFIG, proto/requests.md §2.18-§2.19. */
#include <string.h>

#include "nsrv/config.h"
#include "nsrv/log.h"
#include "nsrv/route.h"
#include "proc_int.h"

void nsrv__processor_apply_route_opts(nsrv_processor_t *p) {
    nsrv_route_opts_t opts = {
        .support_acting_master = p->cfg->support_acting_master,
        .delete_topic_with_broker_registration = p->cfg->delete_topic_with_broker_registration,
    };
    nsrv_route_set_opts(p->rt, &opts);
}

void nsrv_processor_config_changed(nsrv_processor_t *p) {
    nsrv__processor_apply_route_opts(p);
}

void nsrv_proc_update_config(nsrv_proc_ctx_t *ctx) {
    nsrv_buf_t remark = NSRV_BUF_INIT;
    int rc =
        nsrv_config_update(ctx->p->cfg, (const char *)ctx->req->body, ctx->req->body_len, &remark);
    switch (rc) {
    case NSRV_CONFIG_UPDATE_OK:
        break;
    case NSRV_CONFIG_UPDATE_NO_PERMISSION:
        nsrv_proc_set_remarkf(ctx, NSRV_RESP_NO_PERMISSION, "%s", remark.data ? remark.data : "");
        goto out;
    default:
        nsrv_proc_set_remarkf(ctx, NSRV_RESP_SYSTEM_ERROR, "%s", remark.data ? remark.data : "");
        goto out;
    }
    if (ctx->req->body_len > 0) {
        nsrv__processor_apply_route_opts(ctx->p);
        if (nsrv_proc_defer_until_durable(ctx, NSRV_DURABLE_CONFIG, "config"))
            goto out; /* answered once the writer thread has it on disk */
        int prc = nsrv_config_persist(ctx->p->cfg);
        if (prc < 0) {
            nsrv_log_error("CONFIG", "persisting config to '%s' failed: %s",
                           ctx->p->cfg->config_store_path, strerror(-prc));
            nsrv_proc_set_remarkf(ctx, NSRV_RESP_SYSTEM_ERROR, "persist config failed: %s",
                                  strerror(-prc));
        }
    }
out:
    nsrv_buf_deinit(&remark);
}

void nsrv_proc_get_config(nsrv_proc_ctx_t *ctx) {
    nsrv_config_render(ctx->p->cfg, ctx->body);
    nsrv_proc_use_body(ctx);
}
