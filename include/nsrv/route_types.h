/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Value types shared by the registration-body decoder and the route table.
 * Strings are NUL-terminated. Objects produced by the decoder live in the
 * request arena; the route table copies what it keeps.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* RocketMQ DataVersion. Missing fields read as 0 (4.9.x has no stateVersion). */
typedef struct {
    int64_t counter;
    int64_t timestamp;
    int64_t state_version;
} nsrv_data_version_t;

static inline bool nsrv_data_version_eq(const nsrv_data_version_t *a,
                                        const nsrv_data_version_t *b) {
    return a->counter == b->counter && a->timestamp == b->timestamp &&
           a->state_version == b->state_version;
}

/* PermName bits and TopicSysFlag bits (proto/route.md §2). */
#define NSRV_PERM_PRIORITY 8
#define NSRV_PERM_READ 4
#define NSRV_PERM_WRITE 2
#define NSRV_PERM_INHERIT 1
#define NSRV_TOPIC_FLAG_UNIT 1
#define NSRV_TOPIC_FLAG_UNIT_SUB 2

/* What the NameServer reads of a broker's TopicConfig (proto/requests.md §2.5.1). */
typedef struct {
    const char *topic_name;
    int32_t read_queue_nums;  /* default 16 */
    int32_t write_queue_nums; /* default 16 */
    int32_t perm;             /* default 6 */
    int32_t topic_sys_flag;   /* default 0 */
} nsrv_topic_config_t;

typedef struct {
    int32_t key;
    int32_t val;
} nsrv_int_pair_t;

/* TopicQueueMappingInfo (static topics, proto/route.md §9). */
typedef struct {
    const char *topic;
    const char *bname;
    const char *scope; /* NULL if absent */
    int64_t epoch;
    int32_t total_queues;
    bool dirty;
    nsrv_int_pair_t *curr_id_map; /* in the order received */
    size_t n_curr_id;
} nsrv_mapping_info_t;

/* A decoded REGISTER_BROKER body (JSON, compressed, or bare wrapper). */
typedef struct {
    nsrv_data_version_t data_version;
    nsrv_topic_config_t *topics;
    size_t n_topics;
    bool has_filter_servers; /* false: the body carried no filterServerList */
    const char **filter_servers;
    size_t n_filter_servers;
    nsrv_mapping_info_t *mappings; /* key: mappings[i].topic */
    size_t n_mappings;
} nsrv_register_body_t;

/* One QueueData of a REGISTER_TOPIC_IN_NAMESRV body. */
typedef struct {
    const char *broker_name;
    int32_t read_queue_nums;
    int32_t write_queue_nums;
    int32_t perm;
    int32_t topic_sys_flag;
} nsrv_queue_data_t;
