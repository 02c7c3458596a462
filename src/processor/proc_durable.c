/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Replies that wait for a durable write. A KV or config handler changes the
 * table in memory, asks the server's durable host for the write and reserves
 * its reply's slot; the reply (SUCCESS, or SYSTEM_ERROR with the reason) is
 * built and sent when the write is on disk. Java answers SUCCESS even when
 * its write failed; nsrvd tells the client, as it did when it wrote inline.
 */
#include <stdio.h>
#include <string.h>

#include "nsrv/alloc.h"
#include "nsrv/log.h"
#include "proc_int.h"

typedef struct {
    nsrv_processor_t *p;
    nsrv_reply_slot_t *slot; /* NULL: a oneway request, or its connection is gone */
    nsrv_cmd_t req;          /* the header fields the reply mirrors */
    const char *what;        /* "kv config", "config": for the remark and the log */
} pending_t;

static void durable_done(void *ud, int rc) {
    pending_t *d = ud;
    char remark[256];
    if (rc < 0)
        nsrv_log_error("PERSIST", "persisting %s failed: %s", d->what, strerror(-rc));
    if (d->slot) {
        nsrv_cmd_t resp;
        nsrv_proc_init_response(&d->req, &resp);
        if (rc < 0) {
            int n =
                snprintf(remark, sizeof remark, "persist %s failed: %s", d->what, strerror(-rc));
            resp.code = NSRV_RESP_SYSTEM_ERROR;
            resp.remark.ptr = remark;
            resp.remark.len = n > 0 && (size_t)n < sizeof remark ? (size_t)n : strlen(remark);
        }
        d->p->replies.fill(d->p->replies.ud, d->slot, &resp);
    }
    nsrv_free(d);
}

bool nsrv_proc_defer_until_durable(nsrv_proc_ctx_t *ctx, nsrv_durable_target_t target,
                                   const char *what) {
    nsrv_processor_t *p = ctx->p;
    if (!p->async)
        return false;
    pending_t *d = nsrv_calloc(1, sizeof *d);
    d->p = p;
    d->what = what;
    d->req.opaque = ctx->req->opaque;
    d->req.ser_type = ctx->req->ser_type;
    if (!p->durable.persist(p->durable.ud, target, durable_done, d)) {
        nsrv_free(d);
        return false;
    }
    /* done never runs inside persist, so the slot is in place before it can be filled. */
    if (!(ctx->req->flag & NSRV_FLAG_ONEWAY)) {
        d->slot = p->replies.reserve(p->replies.ud, ctx->conn_id);
        ctx->deferred = true; /* nothing is sent now, even if the connection is gone */
    }
    return true;
}
