/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The route query's fast path against the generic path (include/nsrv/processor.h,
 * nsrv_processor_route_fast), for tests/test_processor_route_fast.c and fuzz/fuzz_route_fast.c.
 * Two processors over two route tables built alike: each frame runs through the fast
 * path on one and through the generic decode and handler on the other, and what a
 * server would send (the reply's bytes, or none) and the route tables' counters must
 * be the same. A declined frame then runs through the generic path on the fast side
 * too, so the two tables stay alike. Header-only; no cmocka (the fuzz replay lacks it).
 */
#pragma once

#include <stdio.h>
#include <string.h>

#include "nsrv/config.h"
#include "nsrv/kv.h"
#include "nsrv/processor.h"
#include "nsrv/route.h"

/* The topics registered (on one broker or two, one with an order config, one not ASCII);
 * any other name is a missing topic. */
#define RF_CLUSTER "DefaultCluster"
static const char *const rf_topics[] = {
    "TopicTest",
    "T1",
    "T2",
    "%RETRY%group-a",
    "orders.eu-west_1",
    "a",
    "topic-with-a-name-long-enough-for-several-words-0123456789",
    "t\xc3\xb3pico",
};
/* Topics whose order config (orderMessageEnable) is set in the KV store. */
#define RF_ORDERED_TOPIC "T2"

/* Configuration variations, the fuzz input's first byte. */
enum {
    RF_ORDER = 1,     /* orderMessageEnable, with an ORDER_TOPIC_CONFIG entry */
    RF_NOT_READY = 2, /* needWaitForService and still within its wait */
    RF_ACL = 4,       /* an admin allow list: the policy is not open */
};

typedef struct {
    nsrv_config_t cfg;
    nsrv_route_t *rt;
    nsrv_kv_t *kv;
    nsrv_processor_t *p;
    nsrv_arena_t arena;
    nsrv_buf_t body, out;
} rf_side_t;

typedef struct {
    rf_side_t fast, gen;
    uint64_t now_ms;
    char why[160]; /* the mismatch, after rf_run returned RF_MISMATCH */
} rf_pair_t;

typedef enum { RF_DECLINED, RF_ANSWERED, RF_MISMATCH } rf_result_t;

static inline void rf_register(nsrv_route_t *rt, const char *addr, const char *name, size_t from,
                               size_t step, int32_t queues, uint64_t now_ms) {
    nsrv_topic_config_t tc[16];
    size_t n = 0;
    for (size_t i = from; i < sizeof rf_topics / sizeof *rf_topics; i += step) {
        tc[n] = (nsrv_topic_config_t){0};
        tc[n].topic_name = rf_topics[i];
        tc[n].read_queue_nums = queues;
        tc[n].write_queue_nums = queues;
        tc[n].perm = 6;
        n++;
    }
    nsrv_register_body_t body;
    memset(&body, 0, sizeof body);
    body.data_version.counter = 1;
    body.data_version.timestamp = 1700000000000LL;
    body.topics = tc;
    body.n_topics = n;
    body.has_filter_servers = true;
    nsrv_register_req_t req = {
        .cluster = RF_CLUSTER,
        .broker_addr = addr,
        .broker_name = name,
        .ha_server_addr = "ha:1",
        .acting_master = 0,
        .body = &body,
        .conn_id = 1,
    };
    nsrv_register_result_t res;
    nsrv_route_register_broker(rt, &req, now_ms, &res);
}

static inline void rf_side_init(rf_side_t *s, unsigned flags, uint64_t now_ms) {
    nsrv_config_init_defaults(&s->cfg);
    char props[256], err[128];
    /* No files: a fuzzed UPDATE_NAMESRV_CONFIG or PUT_KV_CONFIG stays in memory. */
    int n = snprintf(props, sizeof props,
                     "kvConfigPath=\nconfigStorePath=\norderMessageEnable=%s\n"
                     "needWaitForService=%s\n%s",
                     flags & RF_ORDER ? "true" : "false", flags & RF_NOT_READY ? "true" : "false",
                     flags & RF_ACL ? "adminAllowList=10.0.0.0/8\n" : "");
    if (nsrv_config_load_text(&s->cfg, "route_fast_pair", props, (size_t)n, err, sizeof err) != 0)
        abort();
    s->rt = nsrv_route_create();
    /* broker-a has every topic; broker-b every other one (two-broker routes), with other
     * queue numbers. */
    rf_register(s->rt, "10.0.0.1:10911", "broker-a", 0, 1, 8, now_ms);
    rf_register(s->rt, "10.0.0.2:10911", "broker-b", 0, 2, 4, now_ms);
    s->kv = nsrv_kv_create(NULL);
    nsrv_kv_put(s->kv, "ORDER_TOPIC_CONFIG", RF_ORDERED_TOPIC, "broker-a:4");
    /* Started now: within needWaitForService's wait for the test's whole run. */
    s->p = nsrv_processor_create(&s->cfg, s->rt, s->kv, now_ms);
    if (flags & RF_ACL) {
        nsrv_acl_t *acl = nsrv_acl_create(&s->cfg, err, sizeof err);
        if (!acl)
            abort();
        nsrv_processor_set_acl(s->p, acl);
    }
    nsrv_arena_init(&s->arena, 4096);
    nsrv_buf_init(&s->body);
    nsrv_buf_init(&s->out);
}

static inline void rf_side_free(rf_side_t *s) {
    nsrv_processor_destroy(&s->p);
    nsrv_kv_destroy(&s->kv);
    nsrv_route_destroy(&s->rt);
    nsrv_config_free(&s->cfg);
    nsrv_arena_deinit(&s->arena);
    nsrv_buf_deinit(&s->body);
    nsrv_buf_deinit(&s->out);
}

static inline void rf_pair_init(rf_pair_t *pr, unsigned flags) {
    pr->now_ms = 1000000;
    rf_side_init(&pr->fast, flags, pr->now_ms);
    rf_side_init(&pr->gen, flags, pr->now_ms);
    pr->why[0] = '\0';
}

static inline void rf_pair_free(rf_pair_t *pr) {
    rf_side_free(&pr->fast);
    rf_side_free(&pr->gen);
}

/*
 * What a server does with frame on the generic path (src/server/conn.c): decode (an
 * error closes the connection: no reply), no reply to a response, the handler, the reply
 * encoded unless the request is oneway. s->out holds the reply's bytes; returns whether
 * there is one.
 */
static inline bool rf_generic(rf_side_t *s, const uint8_t *frame, size_t len, uint64_t now_ms) {
    nsrv_buf_reset(&s->out);
    nsrv_arena_reset(&s->arena);
    nsrv_cmd_t req, resp;
    if (nsrv_cmd_decode(frame, len, &s->arena, &req) != 0 || nsrv_cmd_is_response(&req))
        return false;
    if (nsrv_processor_handle(s->p, &req, 1, NULL, now_ms, &s->arena, &s->body, &resp) ||
        nsrv_cmd_is_oneway(&req))
        return false;
    nsrv_cmd_encode(&s->out, &resp);
    return true;
}

static inline bool rf_stats_equal(const rf_pair_t *pr) {
    nsrv_route_stats_t a, b;
    nsrv_route_get_stats(pr->fast.rt, &a);
    nsrv_route_get_stats(pr->gen.rt, &b);
    return memcmp(&a, &b, sizeof a) == 0;
}

/* Runs frame[0..len) (a whole frame, length prefix included) through both paths. */
static inline rf_result_t rf_run(rf_pair_t *pr, const uint8_t *frame, size_t len) {
    nsrv_route_fast_reply_t r;
    bool gen_reply = rf_generic(&pr->gen, frame, len, pr->now_ms);
    bool answered = nsrv_processor_route_fast(pr->fast.p, frame, len, pr->now_ms, &r);
    if (!answered) {
        rf_generic(&pr->fast, frame, len, pr->now_ms); /* the tables stay alike */
        if (!rf_stats_equal(pr)) {
            snprintf(pr->why, sizeof pr->why, "route table counters differ after a decline");
            return RF_MISMATCH;
        }
        return RF_DECLINED;
    }
    /* What the server sends: the head, then the body (src/server/out_batch.c). */
    nsrv_buf_reset(&pr->fast.out);
    nsrv_buf_append(&pr->fast.out, r.head, r.head_len);
    nsrv_buf_append(&pr->fast.out, r.resp.body, r.resp.body_len);
    /* And the reply as the generic encoder writes it from the fast path's nsrv_cmd_t. */
    nsrv_buf_t whole = NSRV_BUF_INIT;
    nsrv_cmd_encode(&whole, &r.resp);
    bool same_cmd =
        whole.len == pr->fast.out.len && memcmp(whole.data, pr->fast.out.data, whole.len) == 0;
    nsrv_buf_deinit(&whole);
    if (!gen_reply) {
        snprintf(pr->why, sizeof pr->why,
                 "the fast path answered a frame the generic one does not");
        return RF_MISMATCH;
    }
    if (pr->fast.out.len != pr->gen.out.len ||
        memcmp(pr->fast.out.data, pr->gen.out.data, pr->gen.out.len) != 0) {
        snprintf(pr->why, sizeof pr->why, "reply bytes differ (%zu fast, %zu generic)",
                 pr->fast.out.len, pr->gen.out.len);
        return RF_MISMATCH;
    }
    if (!same_cmd || r.resp.code != NSRV_RESP_SUCCESS) {
        snprintf(pr->why, sizeof pr->why, "the fast path's reply command is not its bytes");
        return RF_MISMATCH;
    }
    if (!rf_stats_equal(pr)) {
        snprintf(pr->why, sizeof pr->why, "route table counters differ");
        return RF_MISMATCH;
    }
    return RF_ANSWERED;
}
