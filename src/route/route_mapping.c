/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Static-topic mapping infos [topicQueueMappingInfoTable]: topic -> broker
 * name -> TopicQueueMappingInfo, emitted as topicQueueMappingByBroker in
 * routes (proto/route.md §3 step 10c, §9). Like Java, entries are never removed by
 * topic deletion or unregistration. Loop thread only.
 */
#include <stdlib.h>
#include <string.h>

#include "route_int.h"

typedef struct {
    nsrv_int_pair_t p;
    size_t idx;
} pair_pos_t;

static int cmp_pair_pos(const void *a, const void *b) {
    const pair_pos_t *x = a, *y = b;
    if (x->p.key != y->p.key)
        return x->p.key < y->p.key ? -1 : 1;
    return (x->idx > y->idx) - (x->idx < y->idx);
}

/* currIdMap sorted by key; on duplicate keys the last one received wins, as
 * a Java map filled in body order would keep it. O(n log n) whatever the input. */
static void copy_ids(rt_mapping_t *d, const nsrv_mapping_info_t *m) {
    d->ids = NULL;
    d->n_ids = 0;
    if (!m->n_curr_id || !m->curr_id_map)
        return;
    pair_pos_t *tmp = nsrv_malloc(m->n_curr_id * sizeof tmp[0]);
    for (size_t i = 0; i < m->n_curr_id; i++) {
        tmp[i].p = m->curr_id_map[i];
        tmp[i].idx = i;
    }
    qsort(tmp, m->n_curr_id, sizeof tmp[0], cmp_pair_pos);
    d->ids = nsrv_malloc(m->n_curr_id * sizeof d->ids[0]);
    for (size_t i = 0; i < m->n_curr_id; i++) {
        if (i + 1 < m->n_curr_id && tmp[i + 1].p.key == tmp[i].p.key)
            continue; /* a later duplicate follows */
        d->ids[d->n_ids++] = tmp[i].p;
    }
    nsrv_free(tmp);
}

static void mapping_clear(rt_mapping_t *m) {
    nsrv_free(m->bname);
    nsrv_free(m->topic);
    nsrv_free(m->scope);
    nsrv_free(m->ids);
}

static bool mapping_same(const rt_mapping_t *a, const rt_mapping_t *b) {
    return nsrv__route_str_eq_null(a->topic, b->topic) &&
           nsrv__route_str_eq_null(a->scope, b->scope) && a->epoch == b->epoch &&
           a->total_queues == b->total_queues && a->dirty == b->dirty && a->n_ids == b->n_ids &&
           (a->n_ids == 0 || memcmp(a->ids, b->ids, a->n_ids * sizeof a->ids[0]) == 0);
}

void nsrv__route_mapping_put(nsrv_route_t *rt, const nsrv_mapping_info_t *m) {
    if (!m->topic || !m->bname)
        return;
    rt_mtopic_t *mt = (rt_mtopic_t *)nsrv__route_mapping_find(rt, m->topic);
    if (!mt) {
        mt = nsrv_calloc(1, sizeof *mt);
        mt->topic = nsrv_strdup(m->topic);
        HASH_ADD_KEYPTR(hh, rt->mappings, mt->topic, strlen(mt->topic), mt);
    }
    rt_mapping_t nm = {0};
    nm.bname = nsrv_strdup(m->bname);
    nm.topic = nsrv_strdup(m->topic);
    nm.scope = m->scope ? nsrv_strdup(m->scope) : NULL;
    nm.epoch = m->epoch;
    nm.total_queues = m->total_queues;
    nm.dirty = m->dirty;
    copy_ids(&nm, m);

    size_t i = 0;
    while (i < mt->n && strcmp(mt->maps[i].bname, m->bname) < 0)
        i++;
    if (i < mt->n && strcmp(mt->maps[i].bname, m->bname) == 0) {
        if (mapping_same(&mt->maps[i], &nm)) {
            mapping_clear(&nm);
            return;
        }
        mapping_clear(&mt->maps[i]);
        mt->maps[i] = nm;
    } else {
        if (mt->n == mt->cap) {
            mt->cap = mt->cap ? mt->cap * 2 : 2;
            mt->maps = nsrv_realloc(mt->maps, mt->cap * sizeof mt->maps[0]);
        }
        memmove(&mt->maps[i + 1], &mt->maps[i], (mt->n - i) * sizeof mt->maps[0]);
        mt->maps[i] = nm;
        mt->n++;
    }
    rt_topic_t *t = nsrv__route_topic_find(rt, m->topic);
    if (t)
        nsrv__route_topic_invalidate(rt, t);
}

const rt_mtopic_t *nsrv__route_mapping_find(const nsrv_route_t *rt, const char *topic) {
    rt_mtopic_t *mt = NULL;
    if (topic && rt->mappings)
        HASH_FIND_STR(rt->mappings, topic, mt);
    return mt;
}

void nsrv__route_mapping_free_all(nsrv_route_t *rt) {
    rt_mtopic_t *mt, *tmp;
    HASH_ITER(hh, rt->mappings, mt, tmp) {
        HASH_DEL(rt->mappings, mt);
        for (size_t i = 0; i < mt->n; i++)
            mapping_clear(&mt->maps[i]);
        nsrv_free(mt->maps);
        nsrv_free(mt->topic);
        nsrv_free(mt);
    }
}

void nsrv__route_mapping_export(const nsrv_route_t *rt, const char *bname, nsrv_arena_t *arena,
                                nsrv_mapping_info_t **out, size_t *n) {
    size_t count = 0;
    for (const rt_mtopic_t *t = rt->mappings; t; t = t->hh.next) {
        for (size_t i = 0; i < t->n; i++)
            count += strcmp(t->maps[i].bname, bname) == 0;
    }
    *out = NULL;
    *n = 0;
    if (!count)
        return;
    nsrv_mapping_info_t *mi = nsrv_arena_alloc(arena, count * sizeof mi[0]);
    for (const rt_mtopic_t *t = rt->mappings; t; t = t->hh.next) {
        for (size_t i = 0; i < t->n; i++) {
            const rt_mapping_t *m = &t->maps[i];
            if (strcmp(m->bname, bname) != 0)
                continue;
            nsrv_mapping_info_t *d = &mi[(*n)++];
            memset(d, 0, sizeof *d);
            d->topic = nsrv_arena_strndup(arena, t->topic, strlen(t->topic));
            d->bname = nsrv_arena_strndup(arena, m->bname, strlen(m->bname));
            d->scope = m->scope ? nsrv_arena_strndup(arena, m->scope, strlen(m->scope)) : NULL;
            d->epoch = m->epoch;
            d->total_queues = m->total_queues;
            d->dirty = m->dirty;
            if (m->n_ids) {
                d->curr_id_map = nsrv_arena_alloc(arena, m->n_ids * sizeof d->curr_id_map[0]);
                memcpy(d->curr_id_map, m->ids, m->n_ids * sizeof d->curr_id_map[0]);
                d->n_curr_id = m->n_ids;
            }
        }
    }
    *out = mi;
}
