/* SPDX-License-Identifier: Apache-2.0 */
/*
 * GET_ROUTEINFO_BY_TOPIC's fast path (include/nsrv/processor.h). The generic
 * path decodes a whole command (the ext map copied into the arena, every
 * string checked), dispatches it and encodes a reply; for a route query of the
 * usual shape all of that comes down to reading the opaque, the version and
 * the topic. This file reads exactly that shape in place and answers it with
 * the handler's own steps (proc_route.c: readiness, order config, the cached
 * route); anything else is declined and goes the generic way. Declining is
 * always correct, so the reader takes only frames whose every byte it knows
 * the generic decoder reads the same way; the differential test
 * (tests/test_route_fast.c) and fuzz target (fuzz/fuzz_route_fast.c) compare
 * the two paths' replies. Parses untrusted input.
 */
#include "nsrv/acl.h"
#include "nsrv/utf8.h"
#include "proc_int.h"

/* The longest topic taken here (RocketMQ's own limit is 127 characters); a longer one goes
 * the generic way, which answers it the same. */
#define FAST_TOPIC_MAX 255

/* What the route handler reads from a request. */
typedef struct {
    int32_t version;
    int32_t opaque;
    const uint8_t *topic;
    size_t topic_len;
} fast_req_t;

static uint32_t be16(const uint8_t *p) {
    return (uint32_t)p[0] << 8 | p[1];
}

/* The key of the one ext entry taken, as it is on the wire: int16 length, then the name. */
static const uint8_t TOPIC_KEY[] = {0, 5, 't', 'o', 'p', 'i', 'c'};

/*
 * A ROCKETMQ header (proto/remoting.md §4) h[0..len) of exactly: code 105, any
 * language, any version, flag 0 (a request expecting a reply), no remark, and a map
 * of one entry, "topic", whose value is 1..FAST_TOPIC_MAX bytes of ASCII
 * without a NUL, ending where the header ends. The generic decoder keeps every
 * such byte as it is (nsrv_ascii_plain strings are copied unchanged) and the
 * handler reads no other field of it.
 */
static bool read_rocketmq(const uint8_t *h, size_t len, fast_req_t *out) {
    /* Fixed part, the entry's lengths and key, at least one byte of value. */
    if (len < NSRV_HDR_ROCKETMQ_FIXED + sizeof TOPIC_KEY + 4 + 1 ||
        be16(h) != NSRV_REQ_GET_ROUTEINFO_BY_TOPIC || nsrv_load_be32(h + 9) != 0 ||
        nsrv_load_be32(h + 13) != 0)
        return false;
    size_t map_len = len - NSRV_HDR_ROCKETMQ_FIXED;
    const uint8_t *m = h + NSRV_HDR_ROCKETMQ_FIXED;
    size_t topic_len = map_len - sizeof TOPIC_KEY - 4;
    if (nsrv_load_be32(h + 17) != map_len || memcmp(m, TOPIC_KEY, sizeof TOPIC_KEY) != 0 ||
        nsrv_load_be32(m + sizeof TOPIC_KEY) != topic_len || topic_len > FAST_TOPIC_MAX)
        return false;
    out->topic = m + sizeof TOPIC_KEY + 4;
    out->topic_len = topic_len;
    out->version = (int16_t)be16(h + 3);
    out->opaque = (int32_t)nsrv_load_be32(h + 5);
    return nsrv_ascii_plain(out->topic, topic_len);
}

bool nsrv_processor_route_fast(nsrv_processor_t *p, const uint8_t *frame, size_t frame_len,
                               uint64_t now_ms, nsrv_cmd_t *resp) {
    /* The frame's own lengths: N = frame_len - 4, a header with no body after it. */
    if (frame_len < 8 || nsrv_load_be32(frame) != frame_len - 4)
        return false;
    uint32_t word = nsrv_load_be32(frame + 4);
    size_t hdr_len = word & NSRV_HDR_LEN_MAX;
    if (hdr_len != frame_len - 8)
        return false;
    fast_req_t q;
    if (word >> 24 != NSRV_SER_ROCKETMQ || !read_rocketmq(frame + 8, hdr_len, &q))
        return false;
    /* Not ready, or a policy to apply: the handler's error replies and the policy's
     * checks stay on the generic path. */
    if (!nsrv__proc_route_ready(p, now_ms) || !nsrv_acl_is_open(p->acl))
        return false;
    char topic[FAST_TOPIC_MAX + 1];
    memcpy(topic, q.topic, q.topic_len);
    topic[q.topic_len] = '\0';
    nsrv_cmd_t req = {.opaque = q.opaque, .ser_type = NSRV_SER_ROCKETMQ};
    nsrv_proc_init_response(&req, resp);
    return nsrv__proc_route_body(p, topic, q.version >= NSRV_MQ_V4_9_4, NULL, now_ms, resp) == 0;
}
