/* SPDX-License-Identifier: Apache-2.0 */
#include "canned_reply.h"

#include <string.h>

#include "route_requests.h"

#include "nsrv/alloc.h"
#include "nsrv/buf.h"
#include "nsrv/remoting.h"

/* A request header's serialization byte. */
#define SER_OFFSET 4

int64_t nsrv__canned_opaque(nsrv_arena_t *arena, const uint8_t *p, size_t len) {
    if (len >= NSRV__ROCKETMQ_OPAQUE_OFFSET + 4 && p[SER_OFFSET] == NSRV_SER_ROCKETMQ)
        return (int64_t)(int32_t)nsrv_load_be32(p + NSRV__ROCKETMQ_OPAQUE_OFFSET);
    nsrv_cmd_t cmd;
    nsrv_arena_reset(arena);
    if (nsrv_cmd_decode(p, len, arena, &cmd) != 0)
        return -1;
    return (int64_t)(uint32_t)cmd.opaque;
}

void nsrv__canned_append(nsrv_buf_t *out, const nsrv_buf_t *canned, uint32_t opaque) {
    size_t at = out->len;
    nsrv_buf_append(out, canned->data, canned->len);
    nsrv_buf_put_be32_at(out, at + NSRV__ROCKETMQ_OPAQUE_OFFSET, opaque);
}

bool nsrv__canned_build(nsrv_buf_t *out, size_t frame_bytes) {
    nsrv_cmd_t resp = {.code = NSRV_RESP_SUCCESS,
                       .language = NSRV_LANG_JAVA,
                       .version = NSRV_MQ_CURRENT,
                       .flag = NSRV_FLAG_RESPONSE,
                       .ser_type = NSRV_SER_ROCKETMQ};
    nsrv_cmd_encode(out, &resp);
    if (frame_bytes < out->len)
        return false;
    size_t body_len = frame_bytes - out->len;
    uint8_t *body = nsrv_malloc(body_len + 1);
    memset(body, ' ', body_len);
    resp.body = body;
    resp.body_len = body_len;
    nsrv_buf_reset(out);
    nsrv_cmd_encode(out, &resp);
    nsrv_free(body);
    return true;
}
