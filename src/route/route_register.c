/* SPDX-License-Identifier: Apache-2.0 */
/*
 * REGISTER_BROKER: 5.x RouteInfoManager.registerBroker, step by step as
 * proto/route.md §3 numbers it. Loop thread only.
 *
 * 4.9.x brokers (no enableActingMaster ext, acting_master == -1) go through
 * the same algorithm with isOldVersionBroker = true, which is what a 5.x Java
 * NameServer does with them. A 4.9.x Java NameServer would differ in that it
 * (a) rewrites the queue data of ALL topics of a master when the DataVersion
 * changed, without the per-topic "missing entry" check, (b) accepts a first
 * registration carrying a single topic (no step 7), (c) has no state-version
 * check (step 6), no zone, no acting master, no mapping infos, and (d) keys
 * liveness by address alone with a fixed 120 s timeout.
 */
#include "nsrv/route.h"

#include <stdio.h>
#include <string.h>

#include "nsrv/log.h"
#include "route_int.h"

/* Set of incoming topic names, for deleteTopicWithBrokerRegistration. */
typedef struct {
    const char *name;
    UT_hash_handle hh;
} name_ref_t;

/* tcTable.size() == 1: Java's table is a map, so duplicates count once. */
static bool single_topic(const nsrv_register_body_t *body) {
    if (body->n_topics == 0)
        return false;
    const char *first = body->topics[0].topic_name;
    for (size_t i = 1; i < body->n_topics; i++) {
        if (!nsrv__route_str_eq_null(first, body->topics[i].topic_name))
            return false;
    }
    return true;
}

/* Step 10a: drop this broker's queue data of topics it no longer reports. */
static void delete_unreported_topics(nsrv_route_t *rt, rt_bname_t *b,
                                     const nsrv_register_body_t *body) {
    name_ref_t *set = NULL;
    name_ref_t *refs = body->n_topics ? nsrv_calloc(body->n_topics, sizeof refs[0]) : NULL;
    for (size_t i = 0; i < body->n_topics; i++) {
        const char *name = body->topics[i].topic_name;
        name_ref_t *found;
        if (!name)
            continue;
        HASH_FIND_STR(set, name, found);
        if (found)
            continue;
        refs[i].name = name;
        HASH_ADD_KEYPTR(hh, set, name, strlen(name), &refs[i]);
    }
    /* Backwards: a swap-remove moves into k an entry already visited. */
    for (uint32_t k = b->n_topics; k-- > 0;) {
        const char *topic = nsrv__route_topic_at(rt, b->topics[k])->name;
        name_ref_t *found;
        HASH_FIND_STR(set, topic, found);
        if (!found) {
            nsrv_log_info("ROUTE", "broker '%s' no longer reports topic '%s': queue data removed",
                          b->name, topic);
            nsrv__route_remove_qd_at(rt, b, k);
        }
    }
    HASH_CLEAR(hh, set);
    nsrv_free(refs);
}

static void copy_out(char *dst, size_t cap, const char *s) {
    snprintf(dst, cap, "%s", s ? s : "");
}

void nsrv_route_register_broker(nsrv_route_t *rt, const nsrv_register_req_t *req, uint64_t now_ms,
                                nsrv_register_result_t *res) {
    static const nsrv_register_body_t empty_body;
    memset(res, 0, sizeof *res);
    res->status = NSRV_REG_OK;
    if (!req->cluster || !req->broker_addr || !req->broker_name)
        return;
    const char *cluster = req->cluster, *addr = req->broker_addr, *name = req->broker_name;
    const nsrv_register_body_t *body = req->body ? req->body : &empty_body;
    const nsrv_data_version_t *dv = &body->data_version;
    int64_t id = req->broker_id;

    /*
     * Expire what is due first, so every check below sees only live brokers -
     * except this broker's own entry: it is talking to us, so it is refreshed
     * rather than unregistered and re-created (which would also make the
     * server close the very connection this request came on, and that close
     * would then unregister the registration we are about to make).
     */
    bool direct = req->peer_last_seen_ms == 0;
    if (!direct) {
        /* A pulled registration already past its timeout must not resurrect the broker. */
        int64_t t = req->timeout_ms > 0 ? req->timeout_ms : NSRV_ROUTE_DEFAULT_TIMEOUT_MS;
        if (req->peer_last_seen_ms + (uint64_t)t < now_ms)
            return;
    }
    nsrv__route_expire_due(rt, now_ms, direct ? nsrv__route_live_find(rt, cluster, addr) : NULL);

    /* 1. */
    nsrv__route_cluster_add(rt, cluster, name);

    /* 2. */
    rt_bname_t *b = nsrv__route_bname_get(rt, name);
    bool register_first = false, bd_changed = false;
    if (!b->present) {
        b->present = true;
        b->cluster = nsrv_strdup(cluster);
        register_first = true;
        bd_changed = true;
    }

    /* 3. zoneName is overwritten, NULL included. */
    bool is_old = req->acting_master < 0;
    bool acting = !is_old && req->acting_master > 0;
    if (b->acting != acting) {
        b->acting = acting;
        bd_changed = true;
    }
    if (!nsrv__route_str_eq_null(b->zone, req->zone_name)) {
        nsrv_free(b->zone);
        b->zone = req->zone_name ? nsrv_strdup(req->zone_name) : NULL;
        bd_changed = true;
    }

    /* 4. prevMinBrokerId only feeds NOTIFY_MIN_BROKER_ID_CHANGE, which nsrvd
     * does not send (notifyMinBrokerIdChanged is off by default). */

    /* 5. One id per address: a slave turned master (same address, 1 -> 0)
     * loses its old id. */
    for (size_t i = 0; i < b->n_addrs; i++) {
        if (b->addrs[i].id != id && strcmp(b->addrs[i].addr, addr) == 0) {
            nsrv__route_bname_remove_addr(b, addr);
            bd_changed = true;
            break;
        }
    }

    /* 6. State-version conflict: the id is held by another live address with a
     * newer stateVersion; reject the newcomer without an error. */
    const char *old_addr = nsrv__route_bname_addr(b, id);
    if (old_addr && strcmp(old_addr, addr) != 0) {
        const rt_live_t *ol = nsrv__route_live_find(rt, cluster, old_addr);
        if (ol && ol->dv.state_version > dv->state_version) {
            nsrv_log_warn("ROUTE",
                          "broker '%s' id %lld rejected: '%s' holds it with stateVersion %lld > "
                          "%lld",
                          addr, (long long)id, old_addr, (long long)ol->dv.state_version,
                          (long long)dv->state_version);
            nsrv__route_live_remove(rt, cluster, addr);
            if (bd_changed)
                nsrv__route_bname_changed(rt, b);
            return;
        }
    }

    /* 7. Single-topic guard: an incremental registration before the first full
     * one. Steps 1-5 stay done, so an empty BrokerData may remain visible. */
    if (!old_addr && single_topic(body)) {
        nsrv_log_info("ROUTE", "broker '%s' sent a single topic before a full registration", addr);
        res->status = NSRV_REG_FAILED;
        if (bd_changed)
            nsrv__route_bname_changed(rt, b);
        return;
    }

    /* 8. */
    bool was_empty = true;
    if (nsrv__route_bname_put_addr(b, id, addr, &was_empty))
        bd_changed = true;
    register_first = register_first || was_empty;

    /* 9. The prime slave is the smallest-id slave while no master is registered. */
    bool is_master = id == 0;
    bool is_prime_slave = !is_old && !is_master && b->n_addrs && id == b->addrs[0].id;

    /* 10. Only a master or prime slave writes queue data. */
    if (is_master || is_prime_slave) {
        const rt_live_t *prev = nsrv__route_live_find(rt, cluster, addr);
        bool dv_changed = !prev || !nsrv_data_version_eq(&prev->dv, dv);
        if (rt->opts.delete_topic_with_broker_registration && body->n_mappings == 0)
            delete_unreported_topics(rt, b, body);
        for (size_t i = 0; i < body->n_topics; i++) {
            const nsrv_topic_config_t *tc = &body->topics[i];
            if (!tc->topic_name)
                continue;
            bool act = register_first || dv_changed;
            if (!act) {
                const rt_topic_t *t = nsrv__route_topic_find(rt, tc->topic_name);
                act = !t || !nsrv__route_topic_qd(rt, t, b);
            }
            if (!act)
                continue;
            int32_t perm = tc->perm;
            if (is_prime_slave && b->acting)
                perm &= ~NSRV_PERM_WRITE;
            nsrv__route_upsert_qd(rt, tc->topic_name, b, tc->read_queue_nums, tc->write_queue_nums,
                                  perm, tc->topic_sys_flag);
        }
        if (dv_changed || register_first) {
            for (size_t i = 0; i < body->n_mappings; i++)
                nsrv__route_mapping_put(rt, &body->mappings[i]);
        }
    }

    /* 11. The DataVersion compared above was the previous registration's. */
    nsrv__route_live_put(rt, req, dv, now_ms);

    /* 12. Absent list: leave it; empty: remove; else store. */
    if (body->has_filter_servers)
        nsrv__route_filter_set(rt, cluster, addr, body->filter_servers, body->n_filter_servers);

    /* 13. A slave learns its master and the MASTER's haServerAddr, if the master is live. */
    if (id != 0) {
        const char *master = nsrv__route_bname_addr(b, 0);
        const rt_live_t *ml = master ? nsrv__route_live_find(rt, cluster, master) : NULL;
        if (ml) {
            copy_out(res->master_addr, sizeof res->master_addr, master);
            copy_out(res->ha_server_addr, sizeof res->ha_server_addr, ml->ha_addr);
        }
    }

    if (bd_changed)
        nsrv__route_bname_changed(rt, b);
    nsrv__route_tidy(rt); /* step 10 may have removed topics */
}
