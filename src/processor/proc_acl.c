/* SPDX-License-Identifier: Apache-2.0 */
/* The access policy (include/nsrv/acl.h) at the dispatch: before any handler runs. */
#include "nsrv/acl.h"
#include "proc_int.h"

void nsrv_processor_set_acl(nsrv_processor_t *p, nsrv_acl_t *acl) {
    nsrv_acl_destroy(&p->acl);
    p->acl = acl;
}

bool nsrv__proc_acl_permits(nsrv_proc_ctx_t *ctx, const struct sockaddr *peer) {
    nsrv_acl_t *acl = ctx->p->acl;
    if (nsrv_acl_is_open(acl))
        return true;
    char remark[512];
    if (nsrv_acl_check(acl, ctx->req, peer, ctx->now_ms, remark, sizeof remark))
        return true;
    nsrv_proc_set_remarkf(ctx, NSRV_RESP_NO_PERMISSION, "%s", remark);
    return false;
}
