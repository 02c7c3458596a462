/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Route table core: lifetime, the broker-name / topic / cluster tables and the
 * operations that edit them directly (unregister, delete topic, register
 * topic, wipe/add write perm). Registration is in route_register.c, liveness
 * in route_live.c, JSON in route_encode.c. Loop thread only.
 */
#include "nsrv/route.h"

#include <errno.h>
#include <string.h>

#include "nsrv/log.h"
#include "route_int.h"

nsrv_route_t *nsrv_route_create(void) {
    nsrv_route_t *rt = nsrv_calloc(1, sizeof *rt);
    rt->next_expiry = UINT64_MAX;
    nsrv_buf_init(&rt->scratch);
    nsrv__body_intern_init(&rt->bodies);
    return rt;
}

static void cache_clear(rt_cache_t *c) {
    c->valid = false;
    nsrv_free(c->order_conf);
    c->order_conf = NULL;
    nsrv_rcbuf_unref(c->body);
    c->body = NULL;
}

static void bname_clear_data(rt_bname_t *b) {
    for (size_t i = 0; i < b->n_addrs; i++)
        nsrv_free(b->addrs[i].addr);
    nsrv_free(b->addrs);
    b->addrs = NULL;
    b->n_addrs = b->cap_addrs = 0;
    nsrv_free(b->cluster);
    nsrv_free(b->zone);
    b->cluster = b->zone = NULL;
    b->acting = false;
    b->present = false;
}

void nsrv_route_destroy(nsrv_route_t **prt) {
    if (!prt || !*prt)
        return;
    nsrv_route_t *rt = *prt;
    rt_topic_t *t;
    NSRV__TINDEX_FOREACH(&rt->topic_index, t)
    nsrv__route_topic_free(rt, t);
    nsrv__tindex_free(&rt->topic_index);
    nsrv__idvec_free(&rt->caches);
    rt_bname_t *b, *bt;
    HASH_ITER(hh, rt->bnames, b, bt) {
        HASH_DEL(rt->bnames, b);
        bname_clear_data(b);
        nsrv_free(b->topics);
        nsrv_free(b->name);
        nsrv_free(b);
    }
    nsrv__route_qd_free_all(rt);
    rt_cluster_t *c, *ct;
    HASH_ITER(hh, rt->clusters, c, ct) {
        rt_name_t *n, *nt;
        HASH_ITER(hh, c->names, n, nt) {
            HASH_DEL(c->names, n);
            nsrv_free(n->name);
            nsrv_free(n);
        }
        HASH_DEL(rt->clusters, c);
        nsrv_free(c->name);
        nsrv_free(c);
    }
    nsrv__route_live_free_all(rt);
    nsrv__route_mapping_free_all(rt);
    nsrv_buf_deinit(&rt->scratch);
    nsrv__body_intern_deinit(&rt->bodies);
    nsrv_free(rt);
    *prt = NULL;
}

void nsrv_route_set_opts(nsrv_route_t *rt, const nsrv_route_opts_t *opts) {
    bool acting_changed = rt->opts.support_acting_master != opts->support_acting_master;
    rt->opts = *opts;
    if (acting_changed)
        nsrv__route_invalidate_all(rt);
}

void nsrv_route_set_conn_close_cb(nsrv_route_t *rt, void (*cb)(void *ud, uint64_t conn_id),
                                  void *ud) {
    rt->close_cb = cb;
    rt->close_ud = ud;
}

void nsrv_route_get_stats(const nsrv_route_t *rt, nsrv_route_stats_t *out) {
    *out = rt->stats;
    out->route_body_shares = rt->bodies.shares;
}

/* ---- broker names and BrokerData ---- */

rt_bname_t *nsrv__route_bname_find(const nsrv_route_t *rt, const char *name) {
    rt_bname_t *b = NULL;
    if (name)
        HASH_FIND_STR(rt->bnames, name, b);
    return b;
}

rt_bname_t *nsrv__route_bname_get(nsrv_route_t *rt, const char *name) {
    rt_bname_t *b = nsrv__route_bname_find(rt, name);
    if (!b) {
        b = nsrv_calloc(1, sizeof *b);
        b->name = nsrv_strdup(name);
        HASH_ADD_KEYPTR(hh, rt->bnames, b->name, strlen(b->name), b);
    }
    return b;
}

void nsrv__route_bname_release(nsrv_route_t *rt, rt_bname_t *b) {
    if (b->present || b->n_topics)
        return;
    HASH_DEL(rt->bnames, b);
    bname_clear_data(b);
    nsrv_free(b->name);
    nsrv_free(b);
}

void nsrv__route_bname_changed(nsrv_route_t *rt, rt_bname_t *b) {
    NSRV_UNUSED(rt);
    for (uint32_t k = 0; k < b->n_topics; k++)
        nsrv__route_topic_invalidate(rt, nsrv__route_topic_at(rt, b->topics[k]));
}

const char *nsrv__route_bname_addr(const rt_bname_t *b, int64_t id) {
    for (size_t i = 0; i < b->n_addrs; i++) {
        if (b->addrs[i].id == id)
            return b->addrs[i].addr;
        if (b->addrs[i].id > id)
            break;
    }
    return NULL;
}

bool nsrv__route_bname_remove_addr(rt_bname_t *b, const char *addr) {
    for (size_t i = 0; i < b->n_addrs; i++) {
        if (strcmp(b->addrs[i].addr, addr) == 0) {
            nsrv_free(b->addrs[i].addr);
            memmove(&b->addrs[i], &b->addrs[i + 1], (b->n_addrs - i - 1) * sizeof b->addrs[0]);
            b->n_addrs--;
            return true; /* addresses are unique within a BrokerData */
        }
    }
    return false;
}

bool nsrv__route_bname_put_addr(rt_bname_t *b, int64_t id, const char *addr, bool *was_empty) {
    size_t i = 0;
    while (i < b->n_addrs && b->addrs[i].id < id)
        i++;
    if (i < b->n_addrs && b->addrs[i].id == id) {
        *was_empty = b->addrs[i].addr[0] == '\0';
        if (strcmp(b->addrs[i].addr, addr) == 0)
            return false;
        nsrv_free(b->addrs[i].addr);
        b->addrs[i].addr = nsrv_strdup(addr);
        return true;
    }
    *was_empty = true;
    if (b->n_addrs == b->cap_addrs) {
        b->cap_addrs = b->cap_addrs ? b->cap_addrs * 2 : 2;
        b->addrs = nsrv_realloc(b->addrs, b->cap_addrs * sizeof b->addrs[0]);
    }
    memmove(&b->addrs[i + 1], &b->addrs[i], (b->n_addrs - i) * sizeof b->addrs[0]);
    b->addrs[i].id = id;
    b->addrs[i].addr = nsrv_strdup(addr);
    b->n_addrs++;
    return true;
}

/* ---- topics and queue data ---- */

rt_topic_t *nsrv__route_topic_find(const nsrv_route_t *rt, const char *name) {
    return name ? nsrv__tindex_get(&rt->topic_index, name) : NULL;
}

rt_tcache_t *nsrv__route_tcache_get(nsrv_route_t *rt, rt_topic_t *t) {
    if (!t->cache)
        t->cache = 1 + nsrv__idvec_put(&rt->caches, nsrv_calloc(1, sizeof(rt_tcache_t)));
    return nsrv__route_tcache(rt, t);
}

void nsrv__route_topic_invalidate(nsrv_route_t *rt, rt_topic_t *t) {
    /* Keep nothing: a topic that is not read again should not hold memory. */
    rt_tcache_t *tc = nsrv__route_tcache(rt, t);
    if (!tc)
        return;
    for (size_t i = 0; i < NSRV_ARRAY_LEN(tc->mode); i++)
        cache_clear(&tc->mode[i]);
    nsrv_free(tc);
    nsrv__idvec_del(&rt->caches, t->cache - 1);
    t->cache = 0;
}

void nsrv__route_invalidate_all(nsrv_route_t *rt) {
    rt_topic_t *t;
    NSRV__TINDEX_FOREACH(&rt->topic_index, t)
    nsrv__route_topic_invalidate(rt, t);
}

/* Removes every QueueData of b (its group is gone); empty topics are deleted. */
static void remove_all_qds_of(nsrv_route_t *rt, rt_bname_t *b) {
    while (b->n_topics)
        nsrv__route_remove_qd_at(rt, b, b->n_topics - 1);
}

/* ---- clusters ---- */

rt_cluster_t *nsrv__route_cluster_find(const nsrv_route_t *rt, const char *cluster) {
    rt_cluster_t *c = NULL;
    if (cluster)
        HASH_FIND_STR(rt->clusters, cluster, c);
    return c;
}

void nsrv__route_cluster_add(nsrv_route_t *rt, const char *cluster, const char *name) {
    rt_cluster_t *c = nsrv__route_cluster_find(rt, cluster);
    if (!c) {
        c = nsrv_calloc(1, sizeof *c);
        c->name = nsrv_strdup(cluster);
        HASH_ADD_KEYPTR(hh, rt->clusters, c->name, strlen(c->name), c);
    }
    rt_name_t *n;
    HASH_FIND_STR(c->names, name, n);
    if (!n) {
        n = nsrv_calloc(1, sizeof *n);
        n->name = nsrv_strdup(name);
        HASH_ADD_KEYPTR(hh, c->names, n->name, strlen(n->name), n);
    }
}

static void cluster_remove_name(nsrv_route_t *rt, const char *cluster, const char *name) {
    rt_cluster_t *c = nsrv__route_cluster_find(rt, cluster);
    if (!c)
        return;
    rt_name_t *n;
    HASH_FIND_STR(c->names, name, n);
    if (n) {
        HASH_DEL(c->names, n);
        nsrv_free(n->name);
        nsrv_free(n);
    }
    if (!c->names) {
        HASH_DEL(rt->clusters, c);
        nsrv_free(c->name);
        nsrv_free(c);
    }
}

/* ---- unregistration (proto/route.md §5) ---- */

/*
 * One request of 5.x unRegisterBroker, followed by the part of
 * cleanTopicByUnRegisterRequests that concerns it. Java batches requests and
 * cleans topics once per batch; applying them one at a time ends in the same
 * state, because a name that is "reduced" by one request and "removed" by a
 * later one loses its QueueData either way.
 *
 * 4.9.x differs (removal by id, no acting-master bit clearing); nsrvd follows
 * 5.x for every broker, as a 5.x Java NameServer does.
 */
void nsrv__route_unregister(nsrv_route_t *rt, const char *cluster, const char *addr,
                            const char *name, int64_t id) {
    NSRV_UNUSED(id); /* only feeds the min-broker-id notification, which nsrvd does not send */
    nsrv__route_live_remove(rt, cluster, addr);
    nsrv__route_filter_remove(rt, cluster, addr);

    rt_bname_t *b = nsrv__route_bname_find(rt, name);
    bool removed = false;
    if (b && b->present) {
        /* Removal by address, not by id: see apache/rocketmq#5374. */
        if (nsrv__route_bname_remove_addr(b, addr))
            nsrv__route_bname_changed(rt, b);
        if (b->n_addrs == 0) {
            nsrv__route_bname_changed(rt, b);
            bname_clear_data(b);
            removed = true;
            nsrv_log_notice("ROUTE", "broker group '%s' removed (last address '%s')", name, addr);
        }
    }
    if (removed) {
        cluster_remove_name(rt, cluster, name);
        remove_all_qds_of(rt, b);
        nsrv__route_bname_release(rt, b);
        nsrv__route_tidy(rt);
        return;
    }
    /* A reduced group with acting master and no master left: its queues turn read-only. */
    if (b && b->present && b->acting && (b->n_addrs == 0 || b->addrs[0].id > 0)) {
        for (uint32_t k = 0; k < b->n_topics; k++) {
            rt_topic_t *t = nsrv__route_topic_at(rt, b->topics[k]);
            nsrv__route_set_perm(rt, t, b, nsrv__route_topic_qd(rt, t, b)->perm & ~NSRV_PERM_WRITE);
        }
    }
}

void nsrv_route_unregister_broker(nsrv_route_t *rt, const char *cluster, const char *addr,
                                  const char *name, int64_t id) {
    if (!cluster || !addr || !name)
        return;
    nsrv_log_info("ROUTE", "unregister broker '%s' '%s' id %lld in cluster '%s'", name, addr,
                  (long long)id, cluster);
    nsrv__route_unregister(rt, cluster, addr, name, id);
}

/* ---- topic administration ---- */

static int operate_write_perm(nsrv_route_t *rt, const char *broker_name, bool wipe) {
    rt_bname_t *b = nsrv__route_bname_find(rt, broker_name);
    if (!b)
        return 0;
    int count = 0;
    for (uint32_t k = 0; k < b->n_topics; k++) {
        rt_topic_t *t = nsrv__route_topic_at(rt, b->topics[k]);
        int32_t perm = nsrv__route_topic_qd(rt, t, b)->perm;
        nsrv__route_set_perm(rt, t, b,
                             wipe ? (perm & ~NSRV_PERM_WRITE) : (NSRV_PERM_READ | NSRV_PERM_WRITE));
        count++; /* counted even when it was already so (proto/requests.md §2.10) */
    }
    return count;
}

int nsrv_route_wipe_write_perm(nsrv_route_t *rt, const char *broker_name) {
    return operate_write_perm(rt, broker_name, true);
}

int nsrv_route_add_write_perm(nsrv_route_t *rt, const char *broker_name) {
    return operate_write_perm(rt, broker_name, false);
}

static void delete_topic(nsrv_route_t *rt, const char *topic, const char *cluster) {
    rt_topic_t *t = nsrv__route_topic_find(rt, topic);
    if (!t)
        return;
    if (!cluster || !*cluster) {
        for (;;) {
            size_t n = nsrv__route_n_qds(rt, t);
            rt_bname_t *b = nsrv__route_qd_at(rt, t, n - 1)->bname;
            nsrv__route_remove_qd(rt, t, b); /* the last one frees t */
            nsrv__route_bname_release(rt, b);
            if (n == 1)
                return;
        }
    }
    rt_cluster_t *c = nsrv__route_cluster_find(rt, cluster);
    if (!c)
        return;
    for (rt_name_t *n = c->names; n; n = n->hh.next) {
        rt_bname_t *b = nsrv__route_bname_find(rt, n->name);
        if (!b || !nsrv__route_topic_qd(rt, t, b))
            continue;
        bool last = nsrv__route_n_qds(rt, t) == 1;
        nsrv__route_remove_qd(rt, t, b);
        nsrv__route_bname_release(rt, b);
        if (last)
            return; /* the topic is gone */
    }
}

void nsrv_route_delete_topic(nsrv_route_t *rt, const char *topic, const char *cluster) {
    delete_topic(rt, topic, cluster);
    nsrv__route_tidy(rt);
}

void nsrv_route_register_topic(nsrv_route_t *rt, const char *topic, const nsrv_queue_data_t *qds,
                               size_t n) {
    if (!topic || !qds || n == 0)
        return;
    /* A new topic is created only if every name is known; an existing one is
     * merged up to the first unknown name (Java returns there). */
    bool exists = nsrv__route_topic_find(rt, topic) != NULL;
    for (size_t i = 0; i < n; i++) {
        rt_bname_t *b = nsrv__route_bname_find(rt, qds[i].broker_name);
        if (!b || !b->present) {
            nsrv_log_info("ROUTE", "register topic '%s': unknown broker '%s', stopping", topic,
                          qds[i].broker_name ? qds[i].broker_name : "null");
            return;
        }
        if (exists)
            nsrv__route_upsert_qd(rt, topic, b, qds[i].read_queue_nums, qds[i].write_queue_nums,
                                  qds[i].perm, qds[i].topic_sys_flag);
    }
    if (exists)
        return;
    for (size_t i = 0; i < n; i++) {
        rt_bname_t *b = nsrv__route_bname_find(rt, qds[i].broker_name);
        nsrv__route_upsert_qd(rt, topic, b, qds[i].read_queue_nums, qds[i].write_queue_nums,
                              qds[i].perm, qds[i].topic_sys_flag);
    }
}

size_t nsrv_route_broker_count(const nsrv_route_t *rt) {
    return HASH_COUNT(rt->live);
}

void nsrv_route_sizes(const nsrv_route_t *rt, nsrv_route_sizes_t *out) {
    out->topics = rt->topic_index.n;
    out->clusters = HASH_COUNT(rt->clusters);
    out->broker_names = HASH_COUNT(rt->bnames);
    out->live_brokers = HASH_COUNT(rt->live);
    out->route_bodies = rt->bodies.n;
}
