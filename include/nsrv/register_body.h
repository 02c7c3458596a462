/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Decoders (and test encoders) for the request bodies a broker sends to
 * register itself: REGISTER_BROKER (RegisterBrokerBody, JSON or zlib-compressed,
 * proto/requests.md §2.5), QUERY_DATA_VERSION (DataVersion JSON, proto/requests.md §2.4, §3.1) and
 * REGISTER_TOPIC_IN_NAMESRV (TopicRouteData JSON, proto/requests.md §2.13).
 *
 * Pure code: no I/O, callable from any thread with its own arena. Every
 * decoded object lives in the caller's arena and is freed with it.
 * Untrusted input: every length and count is checked, inflation is capped.
 * Fuzzed by src/remoting/fuzz/fuzz_register_body.c; code in src/remoting/body_*.c.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "nsrv/arena.h"
#include "nsrv/buf.h"
#include "nsrv/mq_version.h"
#include "nsrv/route_types.h"

/*
 * Cap on the inflated size of a compressed body. A broker with 20,000 topics
 * inflates to roughly 1 MiB (about 40 bytes of text per topic), so 64 MiB is
 * far above any real broker while bounding what a zlib bomb (deflate expands
 * up to ~1000x) can make us allocate from a 16 MiB frame.
 */
#define NSRV_REGISTER_BODY_MAX_INFLATED ((size_t)64 * 1024 * 1024)

/**
 * CRC-32/IEEE of data[0..len) masked with 0x7FFFFFFF, i.e. Java's
 * `CRC32.getValue() & 0x7FFFFFFF` as used for the `bodyCrc32` ext field
 * (proto/requests.md §2.5 step 1). len 0 yields 0.
 */
uint32_t nsrv_body_crc32(const void *data, size_t len);

/**
 * Decodes a REGISTER_BROKER body.
 *
 * The form is detected from the bytes, not trusted from the header, because
 * 5.x brokers label compressed bodies `compressed=false` (proto/requests.md §2.5.2 note):
 *  - empty body: an empty topic table, DataVersion {0,0,0}, no filter list;
 *  - first non-whitespace byte '{': JSON. With version < NSRV_MQ_V3_0_11 the object is a
 *    bare TopicConfigSerializeWrapper, otherwise a RegisterBrokerBody;
 *  - a valid zlib header (CMF/FLG check): the compressed form; its mapping
 *    section is read only when version >= NSRV_MQ_V5_0_0 and may be absent;
 *  - anything else: an error.
 *
 * Output conventions (all pointers into @p arena, strings NUL-terminated):
 *  - topics, mappings and curr_id_map are in body order; duplicates are kept
 *    (a Java broker never sends them; the consumer upserts, so the last wins);
 *  - a JSON TopicConfig's name is its `topicName` field (Java keys the route
 *    table by it, proto/requests.md §2.5.1); without one, the map key is used;
 *  - a JSON mapping info's topic is its map key (the key Java's registerBroker
 *    stores it under); a compressed one's topic is its `topic` field;
 *  - mapping bname is never NULL (an info without bname is rejected), scope
 *    is NULL when absent;
 *  - missing TopicConfig fields take the Java defaults 16/16/6/0; compressed
 *    topics have topic_sys_flag 0 (the text form does not carry it);
 *  - has_filter_servers is false when filterServerList is absent or null.
 *
 * @param body            borrowed request body (may be NULL when len is 0)
 * @param version         the request header `version`
 * @param compressed_flag the ext `compressed` value; informational only (used
 *                        in error text), detection is by content
 * @param arena           receives every allocation of the result
 * @param out             written only on success
 * @param err             receives "Failed to decode RegisterBrokerBody: <why>"
 *                        on error (may be NULL)
 * @return 0, or NSRV_EBODY (malformed), or NSRV_ETOOBIG (inflates past
 *         NSRV_REGISTER_BODY_MAX_INFLATED).
 */
int nsrv_register_body_decode(const uint8_t *body, size_t len, int32_t version,
                              bool compressed_flag, nsrv_arena_t *arena, nsrv_register_body_t *out,
                              char *err, size_t err_len);

/*
 * What one registration may cost (registerMaxTopics, registerMaxDecodedBytes).
 * A compressed body expands many times over, and each topic it names becomes
 * route-table state, so these bound the memory a single request can claim.
 * 0 means no limit beyond the fixed caps above.
 */
typedef struct {
    size_t max_topics;
    /* Charged while decoding: inflated text plus every structure the decode
     * allocates (JSON trees, topic and mapping arrays, strings). */
    size_t max_decoded_bytes;
} nsrv_register_body_limits_t;

/**
 * nsrv_register_body_decode() within @p lim (NULL: no limits). A body past a
 * limit is NSRV_ETOOBIG with err naming the limit, e.g. "Failed to decode
 * RegisterBrokerBody: 250000 topics exceed registerMaxTopics=200000"; the
 * topic count is checked before anything is allocated for the topics.
 */
int nsrv_register_body_decode_bounded(const uint8_t *body, size_t len, int32_t version,
                                      bool compressed_flag, const nsrv_register_body_limits_t *lim,
                                      nsrv_arena_t *arena, nsrv_register_body_t *out, char *err,
                                      size_t err_len);

/**
 * Decodes a DataVersion JSON object {"counter":..,"stateVersion":..,"timestamp":..}
 * (QUERY_DATA_VERSION body). Missing or null fields read as 0; numeric
 * strings are accepted. An empty body, `null` or a non-object is NSRV_EBODY:
 * the caller decides what a missing DataVersion means (proto/requests.md §2.4: changed).
 * @return 0 (out written) or NSRV_EBODY. The arena holds parse scratch only.
 */
int nsrv_data_version_decode(const uint8_t *body, size_t len, nsrv_arena_t *arena,
                             nsrv_data_version_t *out);

/**
 * Decodes the queueDatas of a REGISTER_TOPIC_IN_NAMESRV body (TopicRouteData
 * JSON, proto/requests.md §2.13). An empty body, a `null` body, or a missing, null or
 * empty queueDatas gives 0 with *n = 0. Missing int fields read as 0 (Java
 * primitives). The list ends before the first null element or element
 * without brokerName: Java's registerTopic stops at such an entry, keeping
 * what it merged before it.
 * @return 0 (*out, *n written) or NSRV_EBODY with a reason in err.
 */
int nsrv_topic_route_queue_datas_decode(const uint8_t *body, size_t len, nsrv_arena_t *arena,
                                        nsrv_queue_data_t **out, size_t *n, char *err,
                                        size_t err_len);

/**
 * Appends @p b as RegisterBrokerBody JSON the way a broker's fastjson writes
 * it (default mode, alphabetical keys, bare currIdMap keys, TopicConfig with
 * attributes/order/topicFilterType). filterServerList is written only when
 * has_filter_servers. For tests, the broker simulator and fuzz round trips.
 */
void nsrv_register_body_encode_json(const nsrv_register_body_t *b, nsrv_buf_t *out);

/**
 * Appends @p b in the compressed form (one zlib stream, level 9) as a 5.x
 * broker of request version @p version writes it: TopicConfig text with a
 * " {}" attributes part, filterServerList as a JSON array (`null` when
 * !has_filter_servers), and the mapping section when version >= NSRV_MQ_V5_0_0.
 * @return 0, -EINVAL if a topic name contains a space (the text form cannot
 *         carry it), -EMSGSIZE if an item exceeds int32, -ENOMEM on zlib failure.
 */
int nsrv_register_body_encode_compressed(const nsrv_register_body_t *b, int32_t version,
                                         nsrv_buf_t *out);
