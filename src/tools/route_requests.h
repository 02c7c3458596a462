/* SPDX-License-Identifier: Apache-2.0 */
/* The load generators' route queries (nsrv-bench, nsrv-fleet, nsrv-tls-bench): the topic
 * names nsrv-brokersim registers, and their GET_ROUTEINFO_BY_TOPIC requests. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "nsrv/buf.h"

/* Where a ROCKETMQ binary header keeps the opaque, request or reply: after the frame
 * length, the header-length word, code (2), language (1) and version (2). */
#define NSRV__ROCKETMQ_OPAQUE_OFFSET 13

/* Name i: shared-topic-<i> when shared, else topic-broker-<b>-<t> of topics per broker. */
void nsrv__bench_topic_name(char *out, size_t len, uint64_t i, uint64_t shared, uint64_t topics);

/* n pre-encoded requests (ROCKETMQ header, opaque 0), one per name; only the opaque changes
 * later. The caller frees each buffer and the array. */
nsrv_buf_t *nsrv__bench_route_requests(uint64_t n, uint64_t shared, uint64_t topics);
