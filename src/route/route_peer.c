/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The live table as the gossip layer sees it: enumerate what this node heard,
 * merge what peers heard (max of last-seen, never a direct heartbeat), apply
 * relayed unregisters (tombstones), and rebuild a broker's registration for a
 * peer that lacks it. Expiry stays local: nothing here removes a broker
 * because a peer stopped hearing it. Loop thread only.
 */
#include "nsrv/route.h"

#include <errno.h>
#include <string.h>

#include "route_int.h"

int nsrv_data_version_cmp(const nsrv_data_version_t *a, const nsrv_data_version_t *b) {
    if (a->state_version != b->state_version)
        return a->state_version < b->state_version ? -1 : 1;
    if (a->counter != b->counter)
        return a->counter < b->counter ? -1 : 1;
    if (a->timestamp != b->timestamp)
        return a->timestamp < b->timestamp ? -1 : 1;
    return 0;
}

static void fill_info(const nsrv_route_t *rt, const rt_live_t *l, nsrv_route_live_info_t *out) {
    const rt_bname_t *b = l->name ? nsrv__route_bname_find(rt, l->name) : NULL;
    *out = (nsrv_route_live_info_t){
        .cluster = l->k.cluster,
        .broker_addr = l->k.addr,
        .broker_id = l->id,
        .broker_name = l->name ? l->name : "",
        .ha_server_addr = l->ha_addr,
        .acting_master = l->acting_master,
        .timeout_ms = l->timeout_ms,
        .zone_name = b && b->present ? b->zone : NULL,
        .data_version = l->dv,
        .conn_id = l->conn_id,
        .created_ms = l->created_ms,
        .last_direct_ms = l->last_direct_ms,
        .last_seen_ms = l->last_seen_ms,
    };
}

void nsrv_route_foreach_live(nsrv_route_t *rt, uint64_t now_ms,
                             void (*cb)(void *ud, const nsrv_route_live_info_t *info), void *ud) {
    nsrv__route_expire_due(rt, now_ms, NULL);
    for (rt_live_t *l = rt->live, *next; l; l = next) {
        next = l->hh.next;
        nsrv_route_live_info_t info;
        fill_info(rt, l, &info);
        cb(ud, &info);
    }
}

bool nsrv_route_live_info(nsrv_route_t *rt, const char *cluster, const char *addr, uint64_t now_ms,
                          nsrv_route_live_info_t *out) {
    nsrv__route_expire_due(rt, now_ms, NULL);
    const rt_live_t *l = nsrv__route_live_find(rt, cluster, addr);
    if (!l)
        return false;
    fill_info(rt, l, out);
    return true;
}

nsrv_peer_seen_t nsrv_route_peer_seen(nsrv_route_t *rt, const char *cluster, const char *addr,
                                      const nsrv_data_version_t *dv, uint64_t last_seen_ms,
                                      uint64_t now_ms) {
    nsrv__route_expire_due(rt, now_ms, NULL);
    rt_live_t *l = nsrv__route_live_find(rt, cluster, addr);
    if (!l)
        return NSRV_PEER_SEEN_UNKNOWN;
    /* Only ever later: the cached earliest-deadline bound stays valid. */
    if (last_seen_ms > l->last_seen_ms && last_seen_ms <= now_ms)
        l->last_seen_ms = last_seen_ms;
    int c = nsrv_data_version_cmp(dv, &l->dv);
    return c > 0 ? NSRV_PEER_SEEN_NEWER : c < 0 ? NSRV_PEER_SEEN_OLDER : NSRV_PEER_SEEN_SAME;
}

bool nsrv_route_peer_unregister(nsrv_route_t *rt, const char *cluster, const char *addr,
                                const char *name, int64_t id, uint64_t event_ms, uint64_t now_ms) {
    nsrv__route_expire_due(rt, now_ms, NULL);
    const rt_live_t *l = nsrv__route_live_find(rt, cluster, addr);
    if (!l || l->last_seen_ms > event_ms)
        return false;
    nsrv__route_unregister(rt, cluster, addr, name, id);
    return true;
}

int nsrv_route_export_body(nsrv_route_t *rt, const char *cluster, const char *addr,
                           nsrv_arena_t *arena, nsrv_register_body_t *out) {
    memset(out, 0, sizeof *out);
    const rt_live_t *l = nsrv__route_live_find(rt, cluster, addr);
    if (!l)
        return -ENOENT;
    out->data_version = l->dv;
    const rt_bname_t *b = l->name ? nsrv__route_bname_find(rt, l->name) : NULL;
    if (b) {
        size_t n = b->n_topics;
        out->topics = nsrv_arena_alloc(arena, (n ? n : 1) * sizeof out->topics[0]);
        for (size_t k = 0; k < n; k++) {
            const rt_topic_t *topic = nsrv__route_topic_at(rt, b->topics[k]);
            const rt_qd_t *qd = nsrv__route_topic_qd(rt, topic, b);
            nsrv_topic_config_t *t = &out->topics[out->n_topics++];
            t->topic_name = nsrv_arena_strndup(arena, topic->name, strlen(topic->name));
            t->read_queue_nums = qd->read_queue_nums;
            t->write_queue_nums = qd->write_queue_nums;
            t->perm = qd->perm;
            t->topic_sys_flag = qd->topic_sys_flag;
        }
        nsrv__route_mapping_export(rt, b->name, arena, &out->mappings, &out->n_mappings);
    }
    const rt_filter_t *f = nsrv__route_filter_find(rt, cluster, addr);
    out->has_filter_servers = true;
    if (f && f->n) {
        out->filter_servers = nsrv_arena_alloc(arena, f->n * sizeof out->filter_servers[0]);
        for (size_t i = 0; i < f->n; i++)
            out->filter_servers[i] =
                nsrv_arena_strndup(arena, f->servers[i], strlen(f->servers[i]));
        out->n_filter_servers = f->n;
    }
    return 0;
}
