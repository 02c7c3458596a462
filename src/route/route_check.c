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
    if (!t->cache)
        return 0;
    for (int m = 0; m < 2; m++) {
        const rt_cache_t *c = &t->cache->mode[m];
        if (!c->valid) {
            if (c->body || c->order_conf)
                FAIL("invalid cache of topic '%s' mode %d still holds memory", t->name, m);
            continue;
        }
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

/* The order array, its tombstones and the index agree (topic_index.h). */
static int check_index(const nsrv_route_t *rt, char *why, size_t why_len) {
    const rt_topic_index_t *ix = &rt->topic_index;
    size_t live = 0, used = 0;
    for (uint32_t i = 0; i < ix->n_order; i++) {
        const rt_topic_t *t = ix->order[i];
        if (!t)
            continue;
        live++;
    }
    if (ix->n_order && !ix->order[ix->n_order - 1])
        FAIL("the topic order ends in a tombstone");
    if (live != ix->n || ix->n_order > ix->cap_order)
        FAIL("topic order holds %zu topics in %u of %u, the index counts %zu", live,
             (unsigned)ix->n_order, (unsigned)ix->cap_order, ix->n);
    for (size_t i = 0; i < ix->cap; i++) {
        const rt_tslot_t *s = &ix->slots[i];
        if (!s->hash)
            continue;
        used++;
        if (s->pos >= ix->n_order || !ix->order[s->pos])
            FAIL("index slot %zu names position %u, which holds no topic", i, (unsigned)s->pos);
        if (nsrv__tindex_hash(ix->order[s->pos]->name) != s->hash)
            FAIL("index slot of '%s' has a wrong hash", ix->order[s->pos]->name);
    }
    if (used != ix->n || (ix->cap && ix->n * 2 > ix->cap))
        FAIL("index holds %zu slots for %zu topics in %zu", used, ix->n, ix->cap);
    return 0;
}

/* Counts into *n_qds the QueueData of every topic. */
static int check_topics(const nsrv_route_t *rt, size_t *n_qds, char *why, size_t why_len) {
    *n_qds = 0;
    int rc = check_index(rt, why, why_len);
    if (rc)
        return rc;
    const rt_topic_t *t;
    NSRV__TINDEX_FOREACH(&rt->topic_index, t) {
        if (nsrv__route_topic_find(rt, t->name) != t)
            FAIL("topic '%s' not found through the index", t->name);
        if (t->more && t->more->n == 0)
            FAIL("topic '%s' keeps an empty array", t->name);
        *n_qds += nsrv__route_n_qds(t);
        for (size_t i = 0; i < nsrv__route_n_qds(t); i++) {
            const rt_qd_t *qd = nsrv__route_qd_at(t, i);
            if (qd->topic != t)
                FAIL("qd of '%s' points elsewhere", t->name);
            if (nsrv__route_bname_find(rt, qd->bname->name) != qd->bname)
                FAIL("qd of '%s' names an unindexed broker", t->name);
            if (!qd->bname->present)
                FAIL("topic '%s' has queue data of '%s' without BrokerData", t->name,
                     qd->bname->name);
            for (size_t j = 0; j < i; j++) {
                if (nsrv__route_qd_at(t, j)->bname == qd->bname)
                    FAIL("topic '%s' has two qds for '%s'", t->name, qd->bname->name);
            }
        }
        rc = check_cache(rt, t, why, why_len);
        if (rc)
            return rc;
    }
    return 0;
}

/* Each broker's list holds only its own QueueData, each in its topic; that the lists hold
 * n_qds nodes in all then means every QueueData of every topic is in its broker's list
 * (a topic has at most one per broker), without a walk of the list per QueueData. */
static int check_bnames(const nsrv_route_t *rt, size_t n_qds, char *why, size_t why_len) {
    size_t listed = 0;
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
            if (++listed > n_qds)
                FAIL("the broker lists hold more than the %zu queue data of the topics", n_qds);
            if (qd->bname != b)
                FAIL("foreign qd in list of '%s'", b->name);
            if ((qd->bnext && qd->bnext->bprev != qd) || (!qd->bprev && b->qd_head != qd))
                FAIL("broken qd links of '%s'", b->name);
            if (nsrv__route_topic_qd(qd->topic, b) != qd)
                FAIL("qd of '%s' not in its topic", b->name);
        }
    }
    if (listed != n_qds)
        FAIL("the broker lists hold %zu of the %zu queue data of the topics", listed, n_qds);
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
    size_t n_qds = 0;
    int rc = check_topics(rt, &n_qds, why, why_len);
    if (!rc)
        rc = check_bnames(rt, n_qds, why, why_len);
    if (!rc)
        rc = check_live(rt, now_ms, why, why_len);
    return rc;
}
