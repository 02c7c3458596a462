/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzz target: the route query's fast path against the generic decode and handler
 * (route_fast_pair.h) on arbitrary frames; any difference in what a server would send,
 * or in the route tables' counters, aborts. Input: one byte of configuration (its low
 * bits: RF_ORDER, RF_NOT_READY, RF_ACL; bit 3: the rest is a header, framed here as
 * ROCKETMQ, bit 4: as JSON; otherwise the rest is a whole frame as it is).
 */
#include <stddef.h>
#include <stdint.h>

#include "fuzz_check.h"
#include "nsrv/alloc.h"
#include "route_fast_pair.h"

#define RF_CONFIGS 8
#define HEADER_ROCKETMQ 8
#define HEADER_JSON 16

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* One pair per configuration, kept across inputs: the fuzzed frames' own changes
 * (registrations, deletions) accumulate alike on both sides. */
static rf_pair_t *pairs[RF_CONFIGS];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1)
        return 0;
    unsigned cfg = data[0] % RF_CONFIGS;
    if (!pairs[cfg]) {
        pairs[cfg] = nsrv_malloc(sizeof *pairs[cfg]);
        rf_pair_init(pairs[cfg], cfg);
    }
    const uint8_t *frame = data + 1;
    size_t len = size - 1;
    nsrv_buf_t framed = NSRV_BUF_INIT;
    if (data[0] & (HEADER_ROCKETMQ | HEADER_JSON)) {
        uint32_t type = data[0] & HEADER_ROCKETMQ ? NSRV_SER_ROCKETMQ : NSRV_SER_JSON;
        static const uint8_t prefix[8] = {0};
        nsrv_buf_append(&framed, prefix, sizeof prefix);
        nsrv_buf_append(&framed, frame, len);
        nsrv_buf_put_be32_at(&framed, 0, (uint32_t)(len + 4));
        nsrv_buf_put_be32_at(&framed, 4, type << 24 | (uint32_t)(len & NSRV_HDR_LEN_MAX));
        frame = (const uint8_t *)framed.data;
        len = framed.len;
    }
    rf_result_t res = rf_run(pairs[cfg], frame, len);
    if (res == RF_MISMATCH)
        fprintf(stderr, "route fast path: %s\n", pairs[cfg]->why);
    FUZZ_CHECK(res != RF_MISMATCH);
    nsrv_buf_deinit(&framed);
    return 0;
}
