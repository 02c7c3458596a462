/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Topics' QueueData (route_int.h, "Memory"): the intern table of QueueData
 * values, a topic's reference to them (one id, or an array of ids in insertion
 * order) and the per-broker topic vectors, kept in step. Loop thread only.
 */
#include <string.h>

#include "route_int.h"

/* ---- ids ---- */

uint32_t nsrv__idvec_put(rt_idvec_t *iv, void *p) {
    uint32_t id;
    if (iv->free_head) {
        id = iv->free_head - 1;
        iv->free_head = (uint32_t)((uintptr_t)iv->v[id] >> 1);
    } else {
        if (iv->n == iv->cap) {
            iv->cap = iv->cap ? iv->cap * 2 : 16;
            iv->v = nsrv_realloc(iv->v, iv->cap * sizeof iv->v[0]);
        }
        id = iv->n++;
    }
    iv->v[id] = p;
    iv->used++;
    return id;
}

void nsrv__idvec_del(rt_idvec_t *iv, uint32_t id) {
    iv->v[id] = (void *)(((uintptr_t)iv->free_head << 1) | 1);
    iv->free_head = id + 1;
    iv->used--;
}

void nsrv__idvec_free(rt_idvec_t *iv) {
    nsrv_free(iv->v);
    *iv = (rt_idvec_t){0};
}

/* ---- interned values ---- */

/* The key is hashed as bytes: a padding byte inside it would make equal values differ. */
_Static_assert(RT_QD_KEY_LEN == sizeof(rt_bname_t *) + 4 * sizeof(int32_t),
               "rt_qd_t key fields must be contiguous");

/* The id of the QueueData with this value (key fields of *key), with one more reference. */
static uint32_t qd_intern(nsrv_route_t *rt, const rt_qd_t *key) {
    rt_qd_t *qd;
    HASH_FIND(hh, rt->qd_table, key, RT_QD_KEY_LEN, qd);
    if (!qd) {
        qd = nsrv_calloc(1, sizeof *qd);
        memcpy(qd, key, RT_QD_KEY_LEN);
        qd->id = nsrv__idvec_put(&rt->qd_ids, qd);
        HASH_ADD(hh, rt->qd_table, bname, RT_QD_KEY_LEN, qd);
    }
    qd->refs++;
    return qd->id;
}

static void qd_release(nsrv_route_t *rt, uint32_t id) {
    rt_qd_t *qd = nsrv__idvec_get(&rt->qd_ids, id);
    if (--qd->refs)
        return;
    HASH_DEL(rt->qd_table, qd);
    nsrv__idvec_del(&rt->qd_ids, id);
    nsrv_free(qd);
}

static uint32_t qd_intern_values(nsrv_route_t *rt, rt_bname_t *b, int32_t read_q, int32_t write_q,
                                 int32_t perm, int32_t sys_flag) {
    /* The key's fields are contiguous (RT_QD_KEY_LEN): no padding byte is hashed. */
    rt_qd_t key = {.bname = b,
                   .read_queue_nums = read_q,
                   .write_queue_nums = write_q,
                   .perm = perm,
                   .topic_sys_flag = sys_flag};
    return qd_intern(rt, &key);
}

void nsrv__route_qd_free_all(nsrv_route_t *rt) {
    rt_qd_t *qd, *tmp;
    HASH_ITER(hh, rt->qd_table, qd, tmp) {
        HASH_DEL(rt->qd_table, qd);
        nsrv_free(qd);
    }
    nsrv__idvec_free(&rt->qd_ids);
    for (uint32_t i = 0; i < rt->qd_arrays.n; i++) {
        if (nsrv__idvec_live(&rt->qd_arrays, i))
            nsrv_free(nsrv__idvec_get(&rt->qd_arrays, i));
    }
    nsrv__idvec_free(&rt->qd_arrays);
}

/* ---- a topic's references ---- */

static rt_qd_array_t *qd_array(const nsrv_route_t *rt, const rt_topic_t *t) {
    return (t->qref & RT_QREF_MANY) ? nsrv__idvec_get(&rt->qd_arrays, t->qref & ~RT_QREF_MANY)
                                    : NULL;
}

const uint32_t *nsrv__route_qd_ids(const nsrv_route_t *rt, const rt_topic_t *t, size_t *n) {
    rt_qd_array_t *a = qd_array(rt, t);
    if (!a) {
        *n = 1;
        return &t->qref;
    }
    *n = a->n;
    return a->q;
}

size_t nsrv__route_n_qds(const nsrv_route_t *rt, const rt_topic_t *t) {
    rt_qd_array_t *a = qd_array(rt, t);
    return a ? a->n : 1;
}

const rt_qd_t *nsrv__route_qd_at(const nsrv_route_t *rt, const rt_topic_t *t, size_t i) {
    size_t n;
    const uint32_t *ids = nsrv__route_qd_ids(rt, t, &n);
    return nsrv__route_qd(rt, ids[i]);
}

/* The position of b's QueueData among t's, or n. */
static size_t qd_index(const nsrv_route_t *rt, const rt_topic_t *t, const rt_bname_t *b,
                       size_t *n) {
    const uint32_t *ids = nsrv__route_qd_ids(rt, t, n);
    for (size_t i = 0; i < *n; i++) {
        if (nsrv__route_qd(rt, ids[i])->bname == b)
            return i;
    }
    return *n;
}

const rt_qd_t *nsrv__route_topic_qd(const nsrv_route_t *rt, const rt_topic_t *t,
                                    const rt_bname_t *b) {
    size_t n, i = qd_index(rt, t, b, &n);
    return i < n ? nsrv__route_qd_at(rt, t, i) : NULL;
}

/* Appends id to t's references (t has at least one). */
static void topic_append_id(nsrv_route_t *rt, rt_topic_t *t, uint32_t id) {
    rt_qd_array_t *a = qd_array(rt, t);
    if (!a) {
        a = nsrv_malloc(sizeof *a + 2 * sizeof a->q[0]);
        a->n = 2;
        a->q[0] = t->qref;
        a->q[1] = id;
        t->qref = RT_QREF_MANY | nsrv__idvec_put(&rt->qd_arrays, a);
        return;
    }
    /* Capacity (rt_qd_array_t): a power of two is full. */
    if ((a->n & (a->n - 1)) == 0) {
        a = nsrv_realloc(a, sizeof *a + 2 * (size_t)a->n * sizeof a->q[0]);
        rt->qd_arrays.v[t->qref & ~RT_QREF_MANY] = a;
    }
    a->q[a->n++] = id;
}

/* Removes the i-th reference of t, which has two or more; one left goes back inline. */
static void topic_remove_id(nsrv_route_t *rt, rt_topic_t *t, size_t i) {
    rt_qd_array_t *a = qd_array(rt, t);
    qd_release(rt, a->q[i]);
    memmove(&a->q[i], &a->q[i + 1], (a->n - 1 - i) * sizeof a->q[0]);
    if (--a->n > 1)
        return;
    nsrv__idvec_del(&rt->qd_arrays, t->qref & ~RT_QREF_MANY);
    t->qref = a->q[0];
    nsrv_free(a);
}

/* ---- the per-broker topic vectors ---- */

static void bname_add_topic(rt_bname_t *b, rt_tpos_t t) {
    if (b->n_topics == b->cap_topics) {
        b->cap_topics = b->cap_topics ? b->cap_topics * 2 : 4;
        b->topics = nsrv_realloc(b->topics, b->cap_topics * sizeof b->topics[0]);
    }
    b->topics[b->n_topics++] = t;
}

static void bname_remove_topic_at(rt_bname_t *b, uint32_t k) {
    b->topics[k] = b->topics[--b->n_topics];
    if (b->n_topics == 0) {
        nsrv_free(b->topics);
        b->topics = NULL;
        b->cap_topics = 0;
    } else if (b->cap_topics > 16 && b->n_topics * 4 < b->cap_topics) {
        b->cap_topics /= 2;
        b->topics = nsrv_realloc(b->topics, b->cap_topics * sizeof b->topics[0]);
    }
}

/* ---- topics ---- */

/* A new topic whose only QueueData is id. */
static rt_topic_t *topic_new(nsrv_route_t *rt, const char *name, uint32_t id) {
    rt_topic_t *t = nsrv__tindex_add(&rt->topic_index, name);
    t->qref = id;
    return t;
}

void nsrv__route_topic_free(nsrv_route_t *rt, rt_topic_t *t) {
    nsrv__route_topic_invalidate(rt, t);
    size_t n;
    const uint32_t *ids = nsrv__route_qd_ids(rt, t, &n);
    for (size_t i = 0; i < n; i++)
        qd_release(rt, ids[i]);
    rt_qd_array_t *a = qd_array(rt, t);
    if (a) {
        nsrv__idvec_del(&rt->qd_arrays, t->qref & ~RT_QREF_MANY);
        nsrv_free(a);
    }
}

void nsrv__route_upsert_qd(nsrv_route_t *rt, const char *topic, rt_bname_t *b, int32_t read_q,
                           int32_t write_q, int32_t perm, int32_t sys_flag) {
    rt_topic_t *t = nsrv__route_topic_find(rt, topic);
    if (!t) {
        t = topic_new(rt, topic, qd_intern_values(rt, b, read_q, write_q, perm, sys_flag));
        bname_add_topic(b, nsrv__tindex_pos(&rt->topic_index, t));
        return;
    }
    size_t n, i = qd_index(rt, t, b, &n);
    if (i == n) {
        topic_append_id(rt, t, qd_intern_values(rt, b, read_q, write_q, perm, sys_flag));
        bname_add_topic(b, nsrv__tindex_pos(&rt->topic_index, t));
    } else {
        const rt_qd_t *qd = nsrv__route_qd_at(rt, t, i);
        if (qd->read_queue_nums == read_q && qd->write_queue_nums == write_q && qd->perm == perm &&
            qd->topic_sys_flag == sys_flag)
            return; /* Java replaces only when different; so do we, and keep the cache */
        uint32_t *ids = (uint32_t *)nsrv__route_qd_ids(rt, t, &n);
        uint32_t old = ids[i];
        ids[i] = qd_intern_values(rt, b, read_q, write_q, perm, sys_flag);
        qd_release(rt, old);
    }
    nsrv__route_topic_invalidate(rt, t);
}

void nsrv__route_set_perm(nsrv_route_t *rt, rt_topic_t *t, const rt_bname_t *b, int32_t p) {
    size_t n, i = qd_index(rt, t, b, &n);
    if (i == n)
        return;
    uint32_t *ids = (uint32_t *)nsrv__route_qd_ids(rt, t, &n);
    const rt_qd_t *qd = nsrv__route_qd(rt, ids[i]);
    if (qd->perm == p)
        return;
    rt_qd_t key = *qd;
    key.perm = p;
    uint32_t old = ids[i];
    ids[i] = qd_intern(rt, &key);
    qd_release(rt, old);
    nsrv__route_topic_invalidate(rt, t);
}

/* Removes b's QueueData from t; frees t when it was the last. */
static void topic_drop_qd(nsrv_route_t *rt, rt_topic_t *t, const rt_bname_t *b) {
    size_t n, i = qd_index(rt, t, b, &n);
    if (n == 1) {
        nsrv__route_topic_free(rt, t);
        nsrv__tindex_del(&rt->topic_index, t);
        return;
    }
    topic_remove_id(rt, t, i);
    nsrv__route_topic_invalidate(rt, t);
}

void nsrv__route_remove_qd_at(nsrv_route_t *rt, rt_bname_t *b, uint32_t k) {
    rt_topic_t *t = nsrv__route_topic_at(rt, b->topics[k]);
    bname_remove_topic_at(b, k);
    topic_drop_qd(rt, t, b);
}

void nsrv__route_remove_qd(nsrv_route_t *rt, rt_topic_t *t, rt_bname_t *b) {
    rt_tpos_t pos = nsrv__tindex_pos(&rt->topic_index, t);
    for (uint32_t k = 0; k < b->n_topics; k++) {
        if (b->topics[k] == pos) {
            nsrv__route_remove_qd_at(rt, b, k);
            return;
        }
    }
}

/* ---- compaction ---- */

void nsrv__route_tidy(nsrv_route_t *rt) {
    rt_topic_index_t *ix = &rt->topic_index;
    if (!nsrv__tindex_compact_due(ix))
        return;
    nsrv__tindex_compact(ix);
    /* Every position changed: refill the broker vectors from the topics (in creation
     * order, which their order need not keep). */
    for (rt_bname_t *b = rt->bnames; b; b = b->hh.next)
        b->n_topics = 0;
    rt_topic_t *t;
    NSRV__TINDEX_FOREACH(ix, t) {
        size_t n;
        const uint32_t *ids = nsrv__route_qd_ids(rt, t, &n);
        for (size_t i = 0; i < n; i++) {
            rt_bname_t *b = nsrv__route_qd(rt, ids[i])->bname;
            b->topics[b->n_topics++] = nsrv__tindex_pos(ix, t); /* within its capacity */
        }
    }
}
