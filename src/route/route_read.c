/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Read requests of the route table: GET_ROUTEINFO_BY_TOPIC (through the
 * per-topic body cache), cluster info, member group and the topic lists
 * (proto/requests.md §2.8-§2.17, §2.20). Each first expires what is due, so answers do
 * not depend on when the periodic scan ran. Loop thread only.
 */
#include "nsrv/route.h"

#include <errno.h>
#include <string.h>

#include "nsrv/text.h"
#include "route_int.h"

/*
 * The hot path. A valid cache entry was built from the current state: every
 * mutation of what a body depends on clears it (route_int.h). The order conf
 * comes from the KV store, outside the table, so it is part of the key.
 */
int nsrv_route_topic_route_shared(nsrv_route_t *rt, const char *topic, nsrv_route_json_t mode,
                                  const char *order_conf, const char *zone, uint64_t now_ms,
                                  const char **body, size_t *len, nsrv_rcbuf_t **shared) {
    *shared = NULL;
    nsrv__route_expire_due(rt, now_ms, NULL);
    rt_topic_t *t = nsrv__route_topic_find(rt, topic);
    if (!t)
        return -ENOENT;
    if (zone && !nsrv_is_blank_c(zone)) {
        /* Zone-filtered replies are re-encoded in default mode (proto/requests.md §2.8). */
        nsrv_buf_reset(&rt->scratch);
        int rc = nsrv__route_encode_route(rt, t, NSRV_ROUTE_JSON_DEFAULT, order_conf, zone,
                                          &rt->scratch);
        if (rc < 0)
            return rc;
        *body = rt->scratch.data;
        *len = rt->scratch.len;
        return 0;
    }
    if (mode != NSRV_ROUTE_JSON_STANDARD)
        mode = NSRV_ROUTE_JSON_DEFAULT;
    rt_cache_t *c = &nsrv__route_tcache_get(rt, t)->mode[mode];
    if (c->valid && nsrv__route_str_eq_null(c->order_conf, order_conf)) {
        rt->stats.route_cache_hits++;
    } else {
        c->valid = false;
        nsrv_free(c->order_conf);
        c->order_conf = NULL;
        nsrv_rcbuf_unref(c->body);
        c->body = NULL;
        nsrv_buf_reset(&rt->scratch);
        int rc = nsrv__route_encode_route(rt, t, mode, order_conf, NULL, &rt->scratch);
        if (rc < 0)
            return rc; /* not cached: the table's invariants make this unreachable */
        /* Not in the scratch buffer, so a connection can keep it while the table moves on;
         * the one buffer of every topic with these bytes (route_body_intern.h). */
        c->body = nsrv__body_intern(&rt->bodies, rt->scratch.data, rt->scratch.len);
        c->order_conf = order_conf ? nsrv_strdup(order_conf) : NULL;
        c->valid = true;
        rt->stats.route_cache_builds++;
    }
    *body = c->body->data;
    *len = c->body->len;
    *shared = c->body;
    return 0;
}

int nsrv_route_topic_route(nsrv_route_t *rt, const char *topic, nsrv_route_json_t mode,
                           const char *order_conf, const char *zone, uint64_t now_ms,
                           const char **body, size_t *len) {
    nsrv_rcbuf_t *shared;
    return nsrv_route_topic_route_shared(rt, topic, mode, order_conf, zone, now_ms, body, len,
                                         &shared);
}

void nsrv_route_cluster_info(nsrv_route_t *rt, uint64_t now_ms, nsrv_buf_t *out) {
    nsrv__route_expire_due(rt, now_ms, NULL);
    nsrv_buf_append_c(out, "{\"brokerAddrTable\":{");
    bool first = true;
    for (const rt_bname_t *b = rt->bnames; b; b = b->hh.next) {
        if (!b->present)
            continue;
        nsrv_buf_append_sep(out, &first);
        nsrv__route_write_str(out, b->name, NSRV_ROUTE_JSON_DEFAULT);
        nsrv_buf_append_ch(out, ':');
        nsrv__route_write_bd(out, b, NSRV_ROUTE_JSON_DEFAULT, false);
    }
    nsrv_buf_append_c(out, "},\"clusterAddrTable\":{");
    for (const rt_cluster_t *c = rt->clusters; c; c = c->hh.next) {
        if (c != rt->clusters)
            nsrv_buf_append_ch(out, ',');
        nsrv__route_write_str(out, c->name, NSRV_ROUTE_JSON_DEFAULT);
        nsrv_buf_append_c(out, ":[");
        for (const rt_name_t *n = c->names; n; n = n->hh.next) {
            if (n != c->names)
                nsrv_buf_append_ch(out, ',');
            nsrv__route_write_str(out, n->name, NSRV_ROUTE_JSON_DEFAULT);
        }
        nsrv_buf_append_ch(out, ']');
    }
    nsrv_buf_append_c(out, "}}");
}

void nsrv_route_member_group(nsrv_route_t *rt, const char *cluster, const char *broker_name,
                             uint64_t now_ms, nsrv_buf_t *out) {
    nsrv__route_expire_due(rt, now_ms, NULL);
    const rt_bname_t *b = nsrv__route_bname_find(rt, broker_name);
    nsrv_buf_append_c(out, "{\"brokerMemberGroup\":{\"brokerAddrs\":");
    if (b && b->present)
        nsrv__route_write_addrs(out, b, NSRV_ROUTE_JSON_DEFAULT, false);
    else
        nsrv_buf_append_c(out, "{}");
    /* cluster and brokerName echo the request; fastjson omits them when null. */
    if (broker_name) {
        nsrv_buf_append_c(out, ",\"brokerName\":");
        nsrv__route_write_str(out, broker_name, NSRV_ROUTE_JSON_DEFAULT);
    }
    if (cluster) {
        nsrv_buf_append_c(out, ",\"cluster\":");
        nsrv__route_write_str(out, cluster, NSRV_ROUTE_JSON_DEFAULT);
    }
    nsrv_buf_append_c(out, "}}");
}

static void list_item(nsrv_buf_t *out, bool *first, const char *s) {
    nsrv_buf_append_sep(out, first);
    nsrv__route_write_str(out, s, NSRV_ROUTE_JSON_DEFAULT);
}

static bool topic_matches(const nsrv_route_t *rt, const rt_topic_t *t, nsrv_topic_filter_t f) {
    /* Java looks at the first QueueData of the topic's map. */
    int32_t flag = nsrv__route_qd_at(rt, t, 0)->topic_sys_flag;
    bool unit = flag & NSRV_TOPIC_FLAG_UNIT, unit_sub = flag & NSRV_TOPIC_FLAG_UNIT_SUB;
    switch (f) {
    case NSRV_TOPICS_ALL:
        return true;
    case NSRV_TOPICS_UNIT:
        return unit;
    case NSRV_TOPICS_UNIT_SUB:
        return unit_sub;
    case NSRV_TOPICS_UNIT_SUB_NOT_UNIT:
        return unit_sub && !unit;
    }
    return false;
}

void nsrv_route_topic_list(nsrv_route_t *rt, nsrv_topic_filter_t f, uint64_t now_ms,
                           nsrv_buf_t *out) {
    nsrv__route_expire_due(rt, now_ms, NULL);
    nsrv_buf_append_c(out, "{\"topicList\":[");
    bool first = true;
    const rt_topic_t *t;
    NSRV__TINDEX_FOREACH(&rt->topic_index, t) {
        if (topic_matches(rt, t, f))
            list_item(out, &first, t->name);
    }
    nsrv_buf_append_c(out, "]}");
}

/* A fresh mark value for rt_bname_t.mark; on wrap-around every mark is reset. */
static uint32_t next_mark(nsrv_route_t *rt) {
    if (++rt->mark_gen == 0) {
        for (rt_bname_t *b = rt->bnames; b; b = b->hh.next)
            b->mark = 0;
        rt->mark_gen = 1;
    }
    return rt->mark_gen;
}

void nsrv_route_topics_by_cluster(nsrv_route_t *rt, const char *cluster, uint64_t now_ms,
                                  nsrv_buf_t *out) {
    nsrv__route_expire_due(rt, now_ms, NULL);
    nsrv_buf_append_c(out, "{\"topicList\":[");
    const rt_cluster_t *c = nsrv__route_cluster_find(rt, cluster);
    if (c) {
        uint32_t mark = next_mark(rt);
        for (const rt_name_t *n = c->names; n; n = n->hh.next) {
            rt_bname_t *b = nsrv__route_bname_find(rt, n->name);
            if (b)
                b->mark = mark;
        }
        bool first = true;
        const rt_topic_t *t;
        NSRV__TINDEX_FOREACH(&rt->topic_index, t) {
            size_t n;
            const uint32_t *ids = nsrv__route_qd_ids(rt, t, &n);
            for (size_t i = 0; i < n; i++) {
                if (nsrv__route_qd(rt, ids[i])->bname->mark == mark) {
                    list_item(out, &first, t->name);
                    break;
                }
            }
        }
    }
    nsrv_buf_append_c(out, "]}");
}

/* A set in Java: a cluster named like a broker is listed once. */
typedef struct {
    const char *name;
    UT_hash_handle hh;
} seen_t;

typedef struct {
    seen_t *set;
    seen_t *pool; /* one node per candidate, so no allocation per item */
    size_t used;
    bool first;
} unique_list_t;

static void unique_add(unique_list_t *u, nsrv_buf_t *out, const char *s) {
    seen_t *f;
    HASH_FIND_STR(u->set, s, f);
    if (f)
        return;
    u->pool[u->used].name = s;
    HASH_ADD_KEYPTR(hh, u->set, s, strlen(s), &u->pool[u->used]);
    u->used++;
    list_item(out, &u->first, s);
}

void nsrv_route_system_topic_list(nsrv_route_t *rt, uint64_t now_ms, nsrv_buf_t *out) {
    nsrv__route_expire_due(rt, now_ms, NULL);
    nsrv_buf_append_ch(out, '{');
    /* The first address of the first BrokerData that has one. */
    for (const rt_bname_t *b = rt->bnames; b; b = b->hh.next) {
        if (b->present && b->n_addrs) {
            nsrv_buf_append_c(out, "\"brokerAddr\":");
            nsrv__route_write_str(out, b->addrs[0].addr, NSRV_ROUTE_JSON_DEFAULT);
            nsrv_buf_append_ch(out, ',');
            break;
        }
    }
    nsrv_buf_append_c(out, "\"topicList\":[");
    size_t n_items = 0;
    for (const rt_cluster_t *c = rt->clusters; c; c = c->hh.next)
        n_items += 1 + HASH_COUNT(c->names);
    unique_list_t u = {NULL, n_items ? nsrv_calloc(n_items, sizeof(seen_t)) : NULL, 0, true};
    for (const rt_cluster_t *c = rt->clusters; c; c = c->hh.next) {
        unique_add(&u, out, c->name);
        for (const rt_name_t *n = c->names; n; n = n->hh.next)
            unique_add(&u, out, n->name);
    }
    HASH_CLEAR(hh, u.set);
    nsrv_free(u.pool);
    nsrv_buf_append_c(out, "]}");
}
