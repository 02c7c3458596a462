/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Helpers shared by the route-table tests: the per-test fixture (RT_TEST, rt_fix_t), builders of
 * REGISTER_BROKER requests, and readers of routes. Header-only (static inline) so each test binary
 * is one file.
 */
#pragma once

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nsrv/buf.h"
#include "nsrv/common.h"
#include "nsrv/route.h"

#include "route_int.h"

/* The connection ids the table asked to close (nsrv_route_set_conn_close_cb with
 * rt_record_close and a rt_closed_t as ud): the first eight, and how many in all. */
typedef struct {
    uint64_t ids[8];
    size_t n;
} rt_closed_t;

static inline void rt_record_close(void *ud, uint64_t conn_id) {
    rt_closed_t *c = ud;
    if (c->n < NSRV_ARRAY_LEN(c->ids))
        c->ids[c->n] = conn_id;
    c->n++;
}

#define RT_MAX_TOPICS 16

/* One registration, with defaults filled by rt_reg_init. */
typedef struct {
    const char *cluster, *addr, *name, *ha, *zone;
    int64_t id;
    int64_t timeout_ms;
    int acting; /* -1 old broker, 0, 1 */
    uint64_t conn;
    nsrv_data_version_t dv;
    nsrv_topic_config_t topics[RT_MAX_TOPICS];
    size_t n_topics;
    bool has_filter;
    const char *filters[4];
    size_t n_filters;
    nsrv_mapping_info_t mappings[4];
    size_t n_mappings;
    uint64_t peer_seen; /* 0: direct registration; else a gossip import */
} rt_reg_t;

static inline void rt_reg_init(rt_reg_t *r, const char *cluster, const char *addr, const char *name,
                               int64_t id) {
    memset(r, 0, sizeof *r);
    r->cluster = cluster;
    r->addr = addr;
    r->name = name;
    r->ha = "ha:1";
    r->id = id;
    r->acting = 0;
    r->conn = 1;
    r->dv.counter = 1;
    r->dv.timestamp = 1700000000000LL;
    r->has_filter = true; /* a JSON body always has filterServerList: [] */
}

static inline void rt_reg_topic(rt_reg_t *r, const char *topic, int32_t rq, int32_t wq,
                                int32_t perm, int32_t flag) {
    NSRV_REQUIRE(r->n_topics < RT_MAX_TOPICS);
    nsrv_topic_config_t *t = &r->topics[r->n_topics++];
    t->topic_name = topic;
    t->read_queue_nums = rq;
    t->write_queue_nums = wq;
    t->perm = perm;
    t->topic_sys_flag = flag;
}

/* rt_reg_init plus two plain topics t1, t2 (r/w 4, perm 6): the usual full registration (two
 * topics, so never the single-topic guard). */
static inline void rt_reg_two(rt_reg_t *r, const char *cluster, const char *addr, const char *name,
                              int64_t id, const char *t1, const char *t2) {
    rt_reg_init(r, cluster, addr, name, id);
    rt_reg_topic(r, t1, 4, 4, 6, 0);
    rt_reg_topic(r, t2, 4, 4, 6, 0);
}

/* Adds the sample TopicQueueMappingInfo: T1 of broker-a, global scope, epoch 3, 8 queues,
 * currIdMap {1: 3, 0: 0}. */
static inline void rt_reg_sample_mapping(rt_reg_t *r) {
    static nsrv_int_pair_t ids[] = {{1, 3}, {0, 0}};
    NSRV_REQUIRE(r->n_mappings < NSRV_ARRAY_LEN(r->mappings));
    r->mappings[r->n_mappings++] = (nsrv_mapping_info_t){.topic = "T1",
                                                         .bname = "broker-a",
                                                         .scope = "__global__",
                                                         .epoch = 3,
                                                         .total_queues = 8,
                                                         .curr_id_map = ids,
                                                         .n_curr_id = NSRV_ARRAY_LEN(ids)};
}

static inline nsrv_register_result_t rt_reg_do(nsrv_route_t *rt, const rt_reg_t *r,
                                               uint64_t now_ms) {
    nsrv_register_body_t body;
    memset(&body, 0, sizeof body);
    body.data_version = r->dv;
    body.topics = (nsrv_topic_config_t *)r->topics;
    body.n_topics = r->n_topics;
    body.has_filter_servers = r->has_filter;
    body.filter_servers = (const char **)r->filters;
    body.n_filter_servers = r->n_filters;
    body.mappings = (nsrv_mapping_info_t *)r->mappings;
    body.n_mappings = r->n_mappings;
    nsrv_register_req_t req = {
        .cluster = r->cluster,
        .broker_addr = r->addr,
        .broker_name = r->name,
        .ha_server_addr = r->ha,
        .zone_name = r->zone,
        .broker_id = r->id,
        .timeout_ms = r->timeout_ms,
        .acting_master = r->acting,
        .body = &body,
        .conn_id = r->conn,
        .peer_last_seen_ms = r->peer_seen,
    };
    nsrv_register_result_t res;
    nsrv_route_register_broker(rt, &req, now_ms, &res);
    return res;
}

/* Registers a broker with one topic (r/w 4, perm 6). */
static inline nsrv_register_result_t rt_reg_simple(nsrv_route_t *rt, const char *cluster,
                                                   const char *addr, const char *name, int64_t id,
                                                   const char *topic, uint64_t now_ms) {
    rt_reg_t r;
    rt_reg_init(&r, cluster, addr, name, id);
    if (topic) {
        rt_reg_topic(&r, topic, 4, 4, 6, 0);
        rt_reg_topic(&r, "TBW102", 8, 8, 7, 0); /* two topics: never the single-topic guard */
    }
    return rt_reg_do(rt, &r, now_ms);
}

/* The route body as a C string in buf (which the caller deinits), or NULL for -ENOENT. */
static inline const char *rt_route(nsrv_route_t *rt, const char *topic, nsrv_route_json_t mode,
                                   uint64_t now_ms, nsrv_buf_t *buf) {
    const char *body = NULL;
    size_t len = 0;
    int rc = nsrv_route_topic_route(rt, topic, mode, NULL, NULL, now_ms, &body, &len);
    nsrv_buf_reset(buf);
    if (rc == -ENOENT)
        return NULL;
    assert_int_equal(rc, 0);
    nsrv_buf_append(buf, body, len);
    return buf->data;
}

static inline bool rt_has_route(nsrv_route_t *rt, const char *topic, uint64_t now_ms) {
    const char *body;
    size_t len;
    return nsrv_route_topic_route(rt, topic, NSRV_ROUTE_JSON_STANDARD, NULL, NULL, now_ms, &body,
                                  &len) == 0;
}

/* Calls fn(rt, now, &buf) and returns the text in buf (reset first). */
static inline const char *rt_text(void (*fn)(nsrv_route_t *, uint64_t, nsrv_buf_t *),
                                  nsrv_route_t *rt, uint64_t now_ms, nsrv_buf_t *buf) {
    nsrv_buf_reset(buf);
    fn(rt, now_ms, buf);
    return buf->data;
}

static inline const char *rt_topics(nsrv_route_t *rt, nsrv_topic_filter_t f, uint64_t now_ms,
                                    nsrv_buf_t *buf) {
    nsrv_buf_reset(buf);
    nsrv_route_topic_list(rt, f, now_ms, buf);
    return buf->data;
}

static inline const char *rt_cluster_topics(nsrv_route_t *rt, const char *cluster, uint64_t now_ms,
                                            nsrv_buf_t *buf) {
    nsrv_buf_reset(buf);
    nsrv_route_topics_by_cluster(rt, cluster, now_ms, buf);
    return buf->data;
}

static inline void rt_assert_ok(const nsrv_route_t *rt, uint64_t now_ms) {
    char why[256] = "";
    int rc = nsrv__route_check(rt, now_ms, why, sizeof why);
    if (rc != 0)
        fail_msg("route invariant broken (%d): %s", rc, why);
}

/* The clock most route tests start at (their T0), and when the fixture checks the table unless the
 * test sets check_ms. */
#define RT_T0 1000

/*
 * A route test's fixture (RT_TEST): a fresh table and a reply buffer. The teardown, which cmocka
 * runs also after a failed test, checks the table's invariants at check_ms (RT_T0 unless the test
 * moves it; no check if the test destroyed the table itself) and frees both.
 */
typedef struct {
    nsrv_route_t *rt;
    nsrv_buf_t b;
    uint64_t check_ms;
} rt_fix_t;

static inline int rt_fix_setup(void **state) {
    rt_fix_t *f = calloc(1, sizeof *f);
    if (!f)
        return -1;
    f->rt = nsrv_route_create();
    nsrv_buf_init(&f->b);
    f->check_ms = RT_T0;
    *state = f;
    return 0;
}

static inline int rt_fix_teardown(void **state) {
    rt_fix_t *f = *state;
    char why[256] = "";
    int rc = f->rt ? nsrv__route_check(f->rt, f->check_ms, why, sizeof why) : 0;
    nsrv_route_destroy(&f->rt);
    nsrv_buf_deinit(&f->b);
    free(f);
    if (rc != 0) {
        print_error("route invariant broken (%d): %s\n", rc, why);
        return -1;
    }
    return 0;
}

/* For a test that wants a new table: drops the current one (unchecked) for an empty one. */
static inline nsrv_route_t *rt_fix_renew(rt_fix_t *f) {
    nsrv_route_destroy(&f->rt);
    f->rt = nsrv_route_create();
    return f->rt;
}

#define RT_TEST(fn) cmocka_unit_test_setup_teardown(fn, rt_fix_setup, rt_fix_teardown)

/* True if needle occurs in hay. */
static inline bool rt_contains(const char *hay, const char *needle) {
    return hay && strstr(hay, needle) != NULL;
}
