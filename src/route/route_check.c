/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Consistency check of every internal invariant of the route table, for the
 * randomized operation-sequence tests. Walks everything; never on a hot path.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "route_int.h"
#include "route_check.h"

static uint64_t deadline(const rt_live_t *l) {
    uint64_t t = (uint64_t)l->timeout_ms;
    return l->last_seen_ms > UINT64_MAX - t ? UINT64_MAX : l->last_seen_ms + t;
}

/* Adds to *n_bodies the topic's valid cached bodies. */
static int check_cache(const nsrv_route_t *rt, const rt_topic_t *t, size_t *n_bodies, char *why,
                       size_t why_len) {
    const rt_tcache_t *tc = nsrv__route_tcache(rt, t);
    if (!tc)
        return 0;
    for (int m = 0; m < 2; m++) {
        const rt_cache_t *c = &tc->mode[m];
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
        if (!nsrv__body_intern_holds(&rt->bodies, c->body))
            FAIL("cached body of topic '%s' mode %d is not the shared one", t->name, m);
        (*n_bodies)++;
    }
    return 0;
}

/* The records, their tombstones and the index agree (topic_index.h). */
static int check_index(const nsrv_route_t *rt, char *why, size_t why_len) {
    const rt_topic_index_t *ix = &rt->topic_index;
    size_t live = 0, dead = 0, used = 0, off = 0;
    if (ix->used > ix->cap_arena || ix->used % 4)
        FAIL("topic records use %zu of %zu bytes", ix->used, ix->cap_arena);
    while (off < ix->used) {
        const rt_topic_t *t = (const rt_topic_t *)(ix->arena + off);
        size_t size = nsrv__tindex_size_at(ix, off);
        if (off + size > ix->used)
            FAIL("topic record at %zu runs past the records", off);
        if (t->qref == RT_QREF_DEAD) {
            dead += size;
        } else {
            live++;
            if (nsrv__tindex_get(ix, t->name) != t)
                FAIL("topic '%s' not found through the index", t->name);
        }
        off += size;
    }
    if (live != ix->n || dead != ix->dead)
        FAIL("topic records hold %zu topics and %zu bytes of tombstones, the index counts %zu "
             "and %zu",
             live, dead, ix->n, ix->dead);
    if (ix->n == 0 && ix->used)
        FAIL("no topics but %zu bytes of records", ix->used);
    if (ix->cap_arena && ix->pos_mask != nsrv__tindex_pos_mask(ix->cap_arena))
        FAIL("index position mask %#x for %zu bytes of records", (unsigned)ix->pos_mask,
             ix->cap_arena);
    for (size_t i = 0; i < ix->cap; i++) {
        uint32_t slot = ix->slots[i];
        if (!slot)
            continue;
        used++;
        rt_tpos_t pos = nsrv__tindex_slot_pos(ix, slot);
        if (!(slot & ix->pos_mask) || (size_t)pos * 4 >= ix->used ||
            nsrv__tindex_at(ix, pos)->qref == RT_QREF_DEAD)
            FAIL("index slot %zu names position %u, which holds no topic", i, (unsigned)pos);
        /* A wrong tag would hide its topic from every lookup but this walk's. */
        const char *name = nsrv__tindex_at(ix, pos)->name;
        if (!nsrv__tindex_slot_tag_ok(ix, slot, nsrv__tindex_hash(name)))
            FAIL("index slot %zu of topic '%s' has tag %#x", i, name,
                 (unsigned)(slot & ~ix->pos_mask));
    }
    /* Every live record found, as many slots as records, each on a live one: one each. */
    if (used != ix->n || (ix->cap && ix->n * 2 > ix->cap))
        FAIL("index holds %zu slots for %zu topics in %zu", used, ix->n, ix->cap);
    return 0;
}

/* The references of t: live ids, an array only for two or more, one per broker name.
 * Counts them into refs[id] and *n_qds, and t's array into *n_arrays. */
static int check_topic_qds(const nsrv_route_t *rt, const rt_topic_t *t, uint32_t *refs,
                           size_t *n_qds, size_t *n_arrays, size_t *n_caches, char *why,
                           size_t why_len) {
    if (t->qref & RT_QREF_MANY) {
        uint32_t a = t->qref & ~RT_QREF_MANY;
        if (!nsrv__idvec_live(&rt->qd_arrays, a))
            FAIL("topic '%s' names a freed queue-data array", t->name);
        if (((const rt_qd_array_t *)nsrv__idvec_get(&rt->qd_arrays, a))->n < 2)
            FAIL("topic '%s' keeps an array of fewer than two", t->name);
        ++*n_arrays;
    }
    if (t->cache) {
        if (!nsrv__idvec_live(&rt->caches, t->cache - 1))
            FAIL("topic '%s' names freed cached routes", t->name);
        ++*n_caches;
    }
    size_t n;
    const uint32_t *ids = nsrv__route_qd_ids(rt, t, &n);
    *n_qds += n;
    for (size_t i = 0; i < n; i++) {
        if (!nsrv__idvec_live(&rt->qd_ids, ids[i]))
            FAIL("topic '%s' names a freed queue data", t->name);
        refs[ids[i]]++;
        const rt_qd_t *qd = nsrv__route_qd(rt, ids[i]);
        if (qd->id != ids[i])
            FAIL("queue data of '%s' under a wrong id", t->name);
        if (nsrv__route_bname_find(rt, qd->bname->name) != qd->bname)
            FAIL("qd of '%s' names an unindexed broker", t->name);
        if (!qd->bname->present)
            FAIL("topic '%s' has queue data of '%s' without BrokerData", t->name, qd->bname->name);
        for (size_t j = 0; j < i; j++) {
            if (nsrv__route_qd(rt, ids[j])->bname == qd->bname)
                FAIL("topic '%s' has two qds for '%s'", t->name, qd->bname->name);
        }
    }
    return 0;
}

/* Every interned value has as many references as topics name it, and is found by value. */
static int check_interned(const nsrv_route_t *rt, const uint32_t *refs, size_t n_arrays,
                          size_t n_caches, char *why, size_t why_len) {
    size_t live = 0;
    for (uint32_t id = 0; id < rt->qd_ids.n; id++) {
        if (!nsrv__idvec_live(&rt->qd_ids, id))
            continue;
        live++;
        const rt_qd_t *qd = nsrv__route_qd(rt, id), *found;
        if (qd->refs == 0 || qd->refs != refs[id])
            FAIL("queue data %u of '%s' counts %u references, the topics make %u", (unsigned)id,
                 qd->bname->name, (unsigned)qd->refs, (unsigned)refs[id]);
        HASH_FIND(hh, rt->qd_table, qd, RT_QD_KEY_LEN, found);
        if (found != qd)
            FAIL("queue data %u of '%s' not found by its value", (unsigned)id, qd->bname->name);
    }
    if (live != rt->qd_ids.used || live != HASH_COUNT(rt->qd_table))
        FAIL("%zu interned queue data, %u ids used, %u in the table", live,
             (unsigned)rt->qd_ids.used, (unsigned)HASH_COUNT(rt->qd_table));
    if (n_arrays != rt->qd_arrays.used)
        FAIL("%zu topics with queue-data arrays, %u arrays", n_arrays,
             (unsigned)rt->qd_arrays.used);
    if (n_caches != rt->caches.used)
        FAIL("%zu topics with cached routes, %u cached", n_caches, (unsigned)rt->caches.used);
    return 0;
}

/* Counts into *n_qds the QueueData of every topic, into *n_bodies its valid cached bodies. */
static int check_topics(const nsrv_route_t *rt, size_t *n_qds, size_t *n_bodies, char *why,
                        size_t why_len) {
    *n_qds = *n_bodies = 0;
    int rc = check_index(rt, why, why_len);
    if (rc)
        return rc;
    uint32_t *refs = nsrv_calloc(rt->qd_ids.n + 1, sizeof refs[0]);
    size_t n_arrays = 0, n_caches = 0;
    const rt_topic_t *t;
    NSRV__TINDEX_FOREACH(&rt->topic_index, t) {
        rc = check_topic_qds(rt, t, refs, n_qds, &n_arrays, &n_caches, why, why_len);
        if (!rc)
            rc = check_cache(rt, t, n_bodies, why, why_len);
        if (rc)
            break;
    }
    if (!rc)
        rc = check_interned(rt, refs, n_arrays, n_caches, why, why_len);
    nsrv_free(refs);
    return rc;
}

static int cmp_pos(const void *a, const void *b) {
    rt_tpos_t x = *(const rt_tpos_t *)a, y = *(const rt_tpos_t *)b;
    return (x > y) - (x < y);
}

/* Each broker's vector holds, once each, topics with a QueueData of it; that the vectors
 * hold n_qds entries in all then means every QueueData of every topic is in its broker's
 * vector (a topic has at most one per broker). */
static int check_bnames(const nsrv_route_t *rt, size_t n_qds, char *why, size_t why_len) {
    size_t listed = 0;
    for (const rt_bname_t *b = rt->bnames; b; b = b->hh.next) {
        if (!b->present && !b->n_topics)
            FAIL("unreleased broker name '%s'", b->name);
        if (b->present && !b->cluster)
            FAIL("BrokerData '%s' without cluster", b->name);
        if (b->n_topics > b->cap_topics)
            FAIL("topic vector of '%s' holds %u in %u", b->name, (unsigned)b->n_topics,
                 (unsigned)b->cap_topics);
        for (size_t i = 0; i < b->n_addrs; i++) {
            if (i && b->addrs[i - 1].id >= b->addrs[i].id)
                FAIL("addrs of '%s' not sorted by unique id", b->name);
            for (size_t j = 0; j < i; j++) {
                if (strcmp(b->addrs[i].addr, b->addrs[j].addr) == 0)
                    FAIL("address '%s' twice in '%s'", b->addrs[i].addr, b->name);
            }
        }
        listed += b->n_topics;
        if (listed > n_qds)
            FAIL("the broker vectors hold more than the %zu queue data of the topics", n_qds);
        for (uint32_t k = 0; k < b->n_topics; k++) {
            if ((size_t)b->topics[k] * 4 >= rt->topic_index.used)
                FAIL("broker '%s' lists a position past the topics", b->name);
            const rt_topic_t *t = nsrv__route_topic_at(rt, b->topics[k]);
            if (nsrv__route_topic_find(rt, t->name) != t)
                FAIL("broker '%s' lists a topic that is not in the table", b->name);
            if (!nsrv__route_topic_qd(rt, t, b))
                FAIL("broker '%s' lists topic '%s', which has no queue data of it", b->name,
                     t->name);
        }
        if (b->n_topics > 1) {
            rt_tpos_t *sorted = nsrv_malloc(b->n_topics * sizeof sorted[0]);
            memcpy(sorted, b->topics, b->n_topics * sizeof sorted[0]);
            qsort(sorted, b->n_topics, sizeof sorted[0], cmp_pos);
            bool dup = false;
            for (uint32_t k = 1; k < b->n_topics && !dup; k++)
                dup = sorted[k] == sorted[k - 1];
            nsrv_free(sorted);
            if (dup)
                FAIL("broker '%s' lists a topic twice", b->name);
        }
    }
    if (listed != n_qds)
        FAIL("the broker vectors hold %zu of the %zu queue data of the topics", listed, n_qds);
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

/* The shared-body table is sound and its buffers' references cover the topics'
 * (connections still sending a body may hold more). */
static int check_bodies(const nsrv_route_t *rt, size_t n_bodies, char *why, size_t why_len) {
    int rc = nsrv__body_intern_check(&rt->bodies, why, why_len);
    if (rc)
        return rc;
    size_t refs = nsrv__body_intern_outside_refs(&rt->bodies);
    if (refs < n_bodies)
        FAIL("%zu cached bodies, but the shared ones have %zu references", n_bodies, refs);
    return 0;
}

int nsrv__route_check(const nsrv_route_t *rt, uint64_t now_ms, char *why, size_t why_len) {
    size_t n_qds = 0, n_bodies = 0;
    int rc = check_topics(rt, &n_qds, &n_bodies, why, why_len);
    if (!rc)
        rc = check_bodies(rt, n_bodies, why, why_len);
    if (!rc)
        rc = check_bnames(rt, n_qds, why, why_len);
    if (!rc)
        rc = check_live(rt, now_ms, why, why_len);
    return rc;
}
