/* SPDX-License-Identifier: Apache-2.0 */
#include "route_requests.h"

#include <inttypes.h>
#include <stdio.h>

#include "nsrv/alloc.h"
#include "nsrv/remoting.h"

void nsrv__bench_topic_name(char *out, size_t len, uint64_t i, uint64_t shared, uint64_t topics) {
    if (shared)
        snprintf(out, len, "shared-topic-%" PRIu64, i);
    else
        snprintf(out, len, "topic-broker-%04" PRIu64 "-%" PRIu64, i / topics, i % topics);
}

nsrv_buf_t *nsrv__bench_route_requests(uint64_t n, uint64_t shared, uint64_t topics) {
    nsrv_buf_t *reqs = nsrv_calloc(n, sizeof *reqs);
    for (uint64_t i = 0; i < n; i++) {
        char name[128];
        nsrv__bench_topic_name(name, sizeof name, i, shared, topics);
        nsrv_ext_field_t ext = {NSRV_STR_LIT("topic"), nsrv_str_c(name)};
        nsrv_cmd_t cmd = {.code = NSRV_REQ_GET_ROUTEINFO_BY_TOPIC,
                          .language = NSRV_LANG_JAVA,
                          .version = NSRV_MQ_CURRENT,
                          .has_ext = true,
                          .ext = &ext,
                          .n_ext = 1,
                          .ser_type = NSRV_SER_ROCKETMQ};
        nsrv_cmd_encode(&reqs[i], &cmd);
    }
    return reqs;
}
