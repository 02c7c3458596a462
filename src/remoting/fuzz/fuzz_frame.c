/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzz target: a byte stream is split with nsrv_frame_peek and every frame is
 * decoded; what decodes must round-trip (fuzz_common.h). The input is also
 * decoded as one ROCKETMQ binary header, to reach hdr_rocketmq.c directly.
 * A frame the route-query peek takes must decode to the same request.
 */
#include <stddef.h>
#include <stdint.h>

#include "fuzz_common.h"
#include "nsrv/mq_codes.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    nsrv_arena_t arena;
    nsrv_arena_init(&arena, 4096);

    size_t off = 0;
    while (off < size) {
        size_t flen = 0;
        int rc = nsrv_frame_peek(data + off, size - off, NSRV_FRAME_MAX_DEFAULT, &flen);
        if (rc == NSRV_AGAIN || rc == NSRV_EFRAME)
            break;
        FUZZ_CHECK(rc == 0);
        FUZZ_CHECK(flen >= 8 && flen <= size - off);
        nsrv_cmd_t c;
        rc = nsrv_cmd_decode(data + off, flen, &arena, &c);
        FUZZ_CHECK(rc == 0 || rc == NSRV_EFRAME || rc == NSRV_EHEADER || rc == NSRV_ESERTYPE);
        nsrv_route_query_t q;
        if (nsrv_route_query_peek(data + off, flen, &q)) {
            FUZZ_CHECK(rc == 0 && c.code == NSRV_REQ_GET_ROUTEINFO_BY_TOPIC && c.flag == 0);
            FUZZ_CHECK(!c.remark.ptr && c.body_len == 0 && c.n_ext == 1);
            FUZZ_CHECK(c.opaque == q.opaque && c.version == q.version && c.ser_type == q.ser_type);
            nsrv_str_t topic = nsrv_cmd_ext(&c, "topic");
            FUZZ_CHECK(topic.len == q.topic_len && memcmp(topic.ptr, q.topic, q.topic_len) == 0);
        }
        if (rc == 0) {
            FUZZ_CHECK(c.body_len == 0 ||
                       (c.body >= data + off && c.body + c.body_len == data + off + flen));
            fuzz_roundtrip(&c, &arena);
        }
        nsrv_arena_reset(&arena);
        off += flen;
    }

    fuzz_header_as(NSRV_SER_ROCKETMQ, data, size, &arena);
    nsrv_arena_deinit(&arena);
    return 0;
}
