/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzzes the route table with operation sequences read from the input: each
 * byte group picks an operation and its arguments from a small universe of
 * clusters, names, addresses, topics and connections (so collisions are
 * frequent), and time moves forward by input-chosen steps. After every
 * operation every internal invariant is checked (nsrv__route_check), cached
 * route bodies included; a violation aborts. Some queried bodies are kept
 * referenced for a while, as a connection still sending one does, so shared
 * bodies outlive their topics' caches (and the table). A bulk registration of
 * hundreds of generated topics lets later removals leave enough tombstones for
 * the topic arena's compaction (topic_index.h), which the small universe alone
 * never reaches. Replayed over the corpus in ctest.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nsrv/log.h"
#include "nsrv/route.h"
#include "route_int.h"

typedef struct {
    const uint8_t *p;
    size_t n, off;
} in_t;

static uint32_t take(in_t *in, uint32_t mod) {
    if (in->off >= in->n)
        return 0;
    return in->p[in->off++] % mod;
}

static const char *const clusters[] = {"C1", "C2"};
static const char *const names[] = {"ba", "bb", "b/\xe4\xb8\xad"};
static const char *const addrs[] = {"h1:1", "h2:1", "h3:1", "h4:1"};
static const char *const topics[] = {"T0", "T1", "T2", "rmq_sys_SYNC_BROKER_MEMBER_ba"};
static const char *const zones[] = {NULL, "z1", "Z1"};

#define PICK(in, arr) (arr[take((in), (uint32_t)(sizeof(arr) / sizeof(arr[0])))])

/* Bulk topics: BULK_STEP-sized runs of "bulk-NNN"; BULK_MAX of them leave past 4 KiB of
 * tombstones when removed, so the arena compacts. */
enum { BULK_STEP = 64, BULK_MAX = 8 * BULK_STEP };
static char bulk_names[BULK_MAX][12];

static const char *bulk_name(uint32_t i) {
    if (!bulk_names[i][0])
        snprintf(bulk_names[i], sizeof bulk_names[i], "bulk-%03u", (unsigned)i);
    return bulk_names[i];
}

/* A topic of the small universe, or sometimes one of the bulk topics. */
static const char *pick_topic(in_t *in) {
    return take(in, 4) == 0 ? bulk_name(take(in, 255) * 2) : PICK(in, topics);
}

/* A master's full registration of one run of bulk topics: what it reported before and
 * no longer does loses its queue data when deleteTopicWithBrokerRegistration is on, and
 * all of it goes with the broker's unregistration or expiry. */
static void fuzz_register_bulk(nsrv_route_t *rt, in_t *in, uint64_t now) {
    static nsrv_topic_config_t tcs[BULK_MAX];
    uint32_t first = take(in, 8) * BULK_STEP, n = (1 + take(in, 8)) * BULK_STEP;
    if (first + n > BULK_MAX)
        n = BULK_MAX - first;
    int32_t queues = (int32_t)take(in, 3) + 1;
    for (uint32_t i = 0; i < n; i++) {
        tcs[i] = (nsrv_topic_config_t){.topic_name = bulk_name(first + i),
                                       .read_queue_nums = queues,
                                       .write_queue_nums = queues,
                                       .perm = 6};
    }
    nsrv_register_body_t body = {
        .data_version = {take(in, 3), 1, take(in, 3)}, .topics = tcs, .n_topics = n};
    nsrv_register_req_t req = {
        .cluster = PICK(in, clusters),
        .broker_addr = PICK(in, addrs),
        .broker_name = PICK(in, names),
        .ha_server_addr = "ha:1",
        .broker_id = 0,
        .timeout_ms = 5000,
        .acting_master = -1,
        .body = &body,
        .conn_id = take(in, 4),
    };
    nsrv_register_result_t res;
    nsrv_route_register_broker(rt, &req, now, &res);
}

static void fuzz_register(nsrv_route_t *rt, in_t *in, uint64_t now) {
    static nsrv_int_pair_t ids[] = {{0, 0}, {1, 1}, {0, 2}};
    nsrv_topic_config_t tcs[3];
    size_t nt = take(in, 4);
    for (size_t i = 0; i < nt; i++) {
        tcs[i].topic_name = PICK(in, topics);
        tcs[i].read_queue_nums = (int32_t)take(in, 8);
        tcs[i].write_queue_nums = (int32_t)take(in, 8);
        tcs[i].perm = (int32_t)take(in, 16);
        tcs[i].topic_sys_flag = (int32_t)take(in, 4);
    }
    const char *filters[1] = {"f1:1"};
    nsrv_mapping_info_t m = {.topic = PICK(in, topics),
                             .bname = "ba",
                             .epoch = take(in, 3),
                             .curr_id_map = ids,
                             .n_curr_id = take(in, 4)};
    nsrv_register_body_t body = {
        .data_version = {take(in, 3), 1, take(in, 3)},
        .topics = tcs,
        .n_topics = nt,
        .has_filter_servers = take(in, 2),
        .filter_servers = filters,
        .n_filter_servers = take(in, 2),
        .mappings = &m,
        .n_mappings = take(in, 2),
    };
    nsrv_register_req_t req = {
        .cluster = PICK(in, clusters),
        .broker_addr = PICK(in, addrs),
        .broker_name = PICK(in, names),
        .ha_server_addr = "ha:1",
        .zone_name = PICK(in, zones),
        .broker_id = take(in, 3),
        .timeout_ms = take(in, 2) ? 5000 : 0,
        .acting_master = (int)take(in, 3) - 1,
        .body = take(in, 8) ? &body : NULL,
        .conn_id = take(in, 4),
    };
    nsrv_register_result_t res;
    nsrv_route_register_broker(rt, &req, now, &res);
}

static void check(const nsrv_route_t *rt, uint64_t now) {
    char why[256];
    if (nsrv__route_check(rt, now, why, sizeof why) != 0) {
        fprintf(stderr, "route invariant broken: %s\n", why);
        abort();
    }
}

static void ignore_close(void *ud, uint64_t conn_id) {
    (void)ud;
    if (conn_id == 0)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    nsrv_log_level = NSRV_LOG_ERROR;
    in_t in = {data, size, 0};
    nsrv_route_t *rt = nsrv_route_create();
    nsrv_route_set_conn_close_cb(rt, ignore_close, NULL);
    nsrv_buf_t b = NSRV_BUF_INIT;
    uint64_t now = 1000;
    nsrv_rcbuf_t *sending[3] = {NULL, NULL, NULL};
    while (in.off < in.n) {
        now += take(&in, 4) == 0 ? 60000 : take(&in, 200) * 10;
        bool read = false;
        const char *body;
        size_t len;
        nsrv_buf_reset(&b);
        switch (take(&in, 13)) {
        case 0:
        case 1:
            fuzz_register(rt, &in, now);
            break;
        case 2:
            nsrv_route_unregister_broker(rt, PICK(&in, clusters), PICK(&in, addrs),
                                         PICK(&in, names), take(&in, 3));
            break;
        case 3:
            nsrv_route_conn_closed(rt, take(&in, 4), now);
            break;
        case 4:
            nsrv_route_expire(rt, now);
            read = true;
            break;
        case 5:
            nsrv_route_broker_heartbeat(rt, PICK(&in, clusters), PICK(&in, addrs), now);
            read = true;
            break;
        case 6:
            if (take(&in, 2))
                nsrv_route_wipe_write_perm(rt, PICK(&in, names));
            else
                nsrv_route_add_write_perm(rt, PICK(&in, names));
            break;
        case 7:
            nsrv_route_delete_topic(rt, pick_topic(&in), take(&in, 2) ? PICK(&in, clusters) : NULL);
            break;
        case 8: {
            nsrv_queue_data_t qd = {PICK(&in, names), 1, 1, (int32_t)take(&in, 8), 0};
            nsrv_route_register_topic(rt, PICK(&in, topics), &qd, 1);
            break;
        }
        case 9: {
            nsrv_route_opts_t o = {take(&in, 2), take(&in, 2)};
            nsrv_route_set_opts(rt, &o);
            break;
        }
        case 11:
            fuzz_register_bulk(rt, &in, now);
            break;
        case 10:
            nsrv_route_cluster_info(rt, now, &b);
            nsrv_route_system_topic_list(rt, now, &b);
            read = true;
            break;
        default: {
            nsrv_rcbuf_t *shared = NULL;
            nsrv_route_topic_route_shared(
                rt, pick_topic(&in),
                take(&in, 2) ? NSRV_ROUTE_JSON_STANDARD : NSRV_ROUTE_JSON_DEFAULT,
                take(&in, 2) ? "ba:1" : NULL, PICK(&in, zones), now, &body, &len, &shared);
            /* Sometimes kept, in place of what that "connection" was sending before. */
            uint32_t k = take(&in, 6);
            if (k < 3) {
                nsrv_rcbuf_unref(sending[k]);
                sending[k] = shared ? nsrv_rcbuf_ref(shared) : NULL;
            }
            read = true;
            break;
        }
        }
        check(rt, read ? now : 0);
    }
    nsrv_buf_deinit(&b);
    nsrv_route_destroy(&rt);
    for (size_t i = 0; i < 3; i++)
        nsrv_rcbuf_unref(sending[i]);
    return 0;
}
