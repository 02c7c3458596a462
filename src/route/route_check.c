/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Consistency check of every internal invariant of the route table, for the
 * randomized operation-sequence tests. Walks everything; never on a hot path.
 */
#include <stdio.h>
#include <string.h>

#include "route_int.h"

#define FAIL(...)                                                                                  \
    do {                                                                                           \
        if (why)                                                                                   \
            snprintf(why, why_len, __VA_ARGS__);                                                   \
        return -__LINE__;                                                                          \
    } while (0)

static uint64_t deadline(const rt_live_t *l) {
    uint64_t t = (uint64_t)l->timeout_ms;
    return l->last_seen_ms > UINT64_MAX - t ? UINT64_MAX : l->last_seen_ms + t;
}

static int check_cache(const nsrv_route_t *rt, const rt_topic_t *t, char *why, size_t why_len) {
    for (int m = 0; m < 2; m++) {
        const rt_cache_t *c = &t->cache[m];
        if (!c->valid)
            continue;
        nsrv_buf_t fresh = NSRV_BUF_INIT;
        int rc = nsrv__route_encode_route(rt, t, (nsrv_route_json_t)m, c->order_conf, NULL, &fresh);
        bool same = rc == 0 && fresh.len == c->body->len &&
                    memcmp(fresh.data, c->body->data, fresh.len) == 0;
        nsrv_buf_deinit(&fresh);
        if (!same)
            FAIL("stale cache for topic '%s' mode %d", t->name, m);
    }
    return 0;
}

static int check_topics(const nsrv_route_t *rt, char *why, size_t why_len) {
    if (rt->topic_index.n != HASH_COUNT(rt->topics))
        FAIL("topic index holds %zu topics, the table %u", rt->topic_index.n,
             (unsigned)HASH_COUNT(rt->topics));
    for (const rt_topic_t *t = rt->topics; t; t = t->hh.next) {
        if (nsrv__route_topic_find(rt, t->name) != t)
            FAIL("topic '%s' not found through the index", t->name);
        if (t->n_qds == 0)
            FAIL("topic '%s' without queue data", t->name);
        for (size_t i = 0; i < t->n_qds; i++) {
            const rt_qd_t *qd = t->qds[i];
            if (qd->topic != t)
                FAIL("qd of '%s' points elsewhere", t->name);
            if (nsrv__route_bname_find(rt, qd->bname->name) != qd->bname)
                FAIL("qd of '%s' names an unindexed broker", t->name);
            if (!qd->bname->present)
                FAIL("topic '%s' has queue data of '%s' without BrokerData", t->name,
                     qd->bname->name);
            for (size_t j = 0; j < i; j++) {
                if (t->qds[j]->bname == qd->bname)
                    FAIL("topic '%s' has two qds for '%s'", t->name, qd->bname->name);
            }
            const rt_qd_t *p = qd->bname->qd_head;
            while (p && p != qd)
                p = p->bnext;
            if (!p)
                FAIL("qd of '%s' missing from its broker's list", t->name);
        }
        int rc = check_cache(rt, t, why, why_len);
        if (rc)
            return rc;
    }
    return 0;
}

static int check_bnames(const nsrv_route_t *rt, char *why, size_t why_len) {
    for (const rt_bname_t *b = rt->bnames; b; b = b->hh.next) {
        if (!b->present && !b->qd_head)
            FAIL("unreleased broker name '%s'", b->name);
        if (b->present && !b->cluster)
            FAIL("BrokerData '%s' without cluster", b->name);
        for (size_t i = 0; i < b->n_addrs; i++) {
            if (i && b->addrs[i - 1].id >= b->addrs[i].id)
                FAIL("addrs of '%s' not sorted by unique id", b->name);
            for (size_t j = 0; j < i; j++) {
                if (strcmp(b->addrs[i].addr, b->addrs[j].addr) == 0)
                    FAIL("address '%s' twice in '%s'", b->addrs[i].addr, b->name);
            }
        }
        for (const rt_qd_t *qd = b->qd_head; qd; qd = qd->bnext) {
            if (qd->bname != b)
                FAIL("foreign qd in list of '%s'", b->name);
            if (qd->bnext && qd->bnext->bprev != qd)
                FAIL("broken qd links of '%s'", b->name);
            if (nsrv__route_topic_qd(qd->topic, b) != qd)
                FAIL("qd of '%s' not in its topic", b->name);
        }
    }
    for (const rt_cluster_t *c = rt->clusters; c; c = c->hh.next) {
        if (!c->names)
            FAIL("empty cluster '%s'", c->name);
    }
    return 0;
}

static int check_live(const nsrv_route_t *rt, uint64_t now_ms, char *why, size_t why_len) {
    for (const rt_live_t *l = rt->live; l; l = l->hh.next) {
        if (deadline(l) < rt->next_expiry)
            FAIL("next_expiry %llu above deadline of '%s'", (unsigned long long)rt->next_expiry,
                 l->k.addr);
        if (now_ms && now_ms > deadline(l))
            FAIL("expired entry '%s' still live at %llu", l->k.addr, (unsigned long long)now_ms);
        if (l->timeout_ms <= 0)
            FAIL("bad timeout of '%s'", l->k.addr);
        if (l->last_seen_ms < l->last_direct_ms)
            FAIL("last_seen below last_direct for '%s'", l->k.addr);
    }
    for (const rt_conn_t *c = rt->conns; c; c = c->hh.next) {
        size_t n = 0;
        for (const rt_live_t *l = rt->live; l; l = l->hh.next)
            n += l->conn_id == c->conn_id;
        if (c->conn_id == 0 || n != c->refs || n == 0)
            FAIL("conn %llu refs %zu but %zu entries", (unsigned long long)c->conn_id, c->refs, n);
    }
    for (const rt_live_t *l = rt->live; l; l = l->hh.next) {
        if (!l->conn_id)
            continue;
        const rt_conn_t *c;
        HASH_FIND(hh, rt->conns, &l->conn_id, sizeof l->conn_id, c);
        if (!c)
            FAIL("conn %llu of '%s' not indexed", (unsigned long long)l->conn_id, l->k.addr);
    }
    return 0;
}

int nsrv__route_check(const nsrv_route_t *rt, uint64_t now_ms, char *why, size_t why_len) {
    int rc = check_topics(rt, why, why_len);
    if (!rc)
        rc = check_bnames(rt, why, why_len);
    if (!rc)
        rc = check_live(rt, now_ms, why, why_len);
    return rc;
}
