/* SPDX-License-Identifier: Apache-2.0 */
/*
 * GET_ROUTEINFO_BY_TOPIC's fast path (include/nsrv/processor.h). The generic
 * path decodes a whole command (the ext map copied into the arena, every
 * string checked), dispatches it and encodes a reply; for a route query of the
 * usual shape all of that comes down to reading the opaque, the version and
 * the topic. The remoting layer reads exactly that shape in place
 * (nsrv_route_query_peek); this file answers it with the handler's own steps
 * (proc_route.c: readiness, order config, the cached route) and a reply head
 * made from a template; anything else is declined and goes the generic way.
 * The differential test (tests/test_processor_route_fast.c) and fuzz target
 * (fuzz/fuzz_route_fast.c) compare the two paths' replies.
 */
#include "nsrv/acl.h"
#include "nsrv/text.h"
#include "proc_int.h"

/* The opaque the templates are made with: ten decimal digits, and four bytes no other field
 * of a reply head holds. */
#define ROUTE_FAST_OPAQUE 1234567890

void nsrv__proc_route_fast_init(nsrv_processor_t *p) {
    for (uint8_t type = NSRV_SER_JSON; type <= NSRV_SER_ROCKETMQ; type++) {
        nsrv_route_fast_tmpl_t *t = &p->route_fast_tmpl[type];
        nsrv_cmd_t req = {.opaque = ROUTE_FAST_OPAQUE, .ser_type = type}, resp;
        nsrv_proc_init_response(&req, &resp);
        nsrv_buf_t b = NSRV_BUF_INIT;
        nsrv_cmd_encode_head(&b, &resp);
        uint8_t be[4];
        char dec[16];
        const void *key = be;
        size_t key_len = sizeof be;
        if (type == NSRV_SER_ROCKETMQ) {
            nsrv_store_be32(be, ROUTE_FAST_OPAQUE);
        } else {
            key_len = (size_t)snprintf(dec, sizeof dec, "%d", ROUTE_FAST_OPAQUE);
            key = dec;
        }
        /* A reply's head may be one byte longer than the template's: "-2147483648" has one
         * character more than ROUTE_FAST_OPAQUE's ten digits (write_head). */
        const uint8_t *at = b.len < NSRV_ROUTE_FAST_HEAD_MAX && b.len <= sizeof t->bytes
                                ? memmem(b.data, b.len, key, key_len)
                                : NULL;
        t->len = 0; /* the fast path declines this type */
        if (at) {
            memcpy(t->bytes, b.data, b.len);
            t->len = b.len;
            t->opaque_at = (size_t)(at - (const uint8_t *)b.data);
            t->opaque_len = key_len;
        }
        nsrv_buf_deinit(&b);
    }
}

/* The reply head for opaque and a body of body_len bytes, from the type's template: the
 * template's bytes around its opaque, then the frame and header lengths set. */
static void write_head(const nsrv_route_fast_tmpl_t *t, uint8_t type, int32_t opaque,
                       size_t body_len, nsrv_route_fast_reply_t *out) {
    uint8_t *w = out->head;
    memcpy(w, t->bytes, t->opaque_at);
    w += t->opaque_at;
    if (type == NSRV_SER_ROCKETMQ) {
        nsrv_store_be32(w, (uint32_t)opaque);
        w += 4;
    } else {
        w += nsrv_fmt_i32((char *)w, opaque);
    }
    size_t after = t->opaque_at + t->opaque_len;
    memcpy(w, t->bytes + after, t->len - after);
    w += t->len - after;
    out->head_len = (size_t)(w - out->head);
    nsrv_frame_set_lengths(out->head, out->head_len, body_len, type);
}

bool nsrv_processor_route_fast(nsrv_processor_t *p, const uint8_t *frame, size_t frame_len,
                               uint64_t now_ms, nsrv_route_fast_reply_t *out) {
    nsrv_route_query_t q;
    if (!nsrv_route_query_peek(frame, frame_len, &q))
        return false;
    const nsrv_route_fast_tmpl_t *t = &p->route_fast_tmpl[q.ser_type];
    /* Not ready, or a policy to apply: the handler's error replies and the policy's
     * checks stay on the generic path. */
    if (!t->len || !nsrv__proc_route_ready(p, now_ms) || !nsrv_acl_is_open(p->acl))
        return false;
    char topic[NSRV_ROUTE_QUERY_TOPIC_MAX + 1];
    memcpy(topic, q.topic, q.topic_len);
    topic[q.topic_len] = '\0';
    nsrv_cmd_t req = {.opaque = q.opaque, .ser_type = q.ser_type};
    nsrv_proc_init_response(&req, &out->resp);
    if (nsrv__proc_route_body(p, topic, q.version >= NSRV_MQ_V4_9_4, NULL, now_ms, &out->resp) != 0)
        return false;
    write_head(t, q.ser_type, q.opaque, out->resp.body_len, out);
    return true;
}
