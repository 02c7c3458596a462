/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Broker liveness: the live table [brokerLiveTable], the filter-server table
 * that shares its key, heartbeats, connection close and expiry (proto/route.md §7).
 * Loop thread only.
 *
 * The stale-unregister race (apache/rocketmq#11043). In a 5.x Java
 * NameServer, deciding that a broker must go (the expiry scan sees its
 * deadline passed, or its channel fires close/idle/exception) and removing it
 * (BatchUnregistrationService) are separated by a queue and by blocking
 * channel-close I/O. The removal then runs unconditionally by (cluster,
 * address): no freshness re-check, no check of which channel the broker is on
 * now. A broker that re-registered in between - typically over a new
 * connection after the old one broke, or after a GC pause made the scan see
 * it as expired - is wiped, with its queue data, and vanishes from every
 * route until its next registration about 30 s later.
 *
 * Here the decision and the removal are one synchronous step on the loop
 * thread, so nothing can happen in between. Expiry removes an entry only if it
 * is past its deadline at that moment. A live entry remembers the connection
 * its LAST REGISTER_BROKER arrived on, and a close removes only entries still
 * bound to the closing connection: after a re-registration on connection B,
 * the close of the old connection A finds nothing to remove.
 */
#include "nsrv/route.h"

#include <string.h>

#include "nsrv/log.h"
#include "route_int.h"

/* Keys up to this size are built on the stack; longer ones on the heap. */
#define KEY_STACK 320

typedef struct {
    char stack[KEY_STACK];
    char *p;
    size_t len;
} key_tmp_t;

static void key_tmp_make(key_tmp_t *k, const char *cluster, const char *addr) {
    size_t cl = strlen(cluster), al = strlen(addr);
    k->len = cl + 1 + al;
    k->p = k->len + 1 <= sizeof k->stack ? k->stack : nsrv_malloc(k->len + 1);
    memcpy(k->p, cluster, cl);
    k->p[cl] = '\0';
    memcpy(k->p + cl + 1, addr, al);
    k->p[k->len] = '\0';
}

static void key_tmp_done(key_tmp_t *k) {
    if (k->p != k->stack)
        nsrv_free(k->p);
}

/* out = the entry of (cluster, addr) in table, a uthash table keyed by those two names (a
 * macro: the live and filter tables have different entry types). */
#define FIND_BY_CLUSTER_ADDR(table, cluster, addr, out)                                            \
    do {                                                                                           \
        key_tmp_t k_;                                                                              \
        key_tmp_make(&k_, cluster, addr);                                                          \
        HASH_FIND(hh, table, k_.p, k_.len, out);                                                   \
        key_tmp_done(&k_);                                                                         \
    } while (0)

static void key_init(rt_key_t *k, const char *cluster, const char *addr) {
    size_t cl = strlen(cluster), al = strlen(addr);
    k->key_len = cl + 1 + al;
    k->key = nsrv_malloc(k->key_len + 1);
    memcpy(k->key, cluster, cl);
    k->key[cl] = '\0';
    memcpy(k->key + cl + 1, addr, al);
    k->key[k->key_len] = '\0';
    k->cluster = k->key;
    k->addr = k->key + cl + 1;
}

/* last_seen + timeout, saturating: a huge heartbeatTimeoutMillis must not wrap. */
static uint64_t live_deadline(const rt_live_t *l) {
    uint64_t t = (uint64_t)l->timeout_ms;
    return l->last_seen_ms > UINT64_MAX - t ? UINT64_MAX : l->last_seen_ms + t;
}

/* ---- connection index ---- */

static void conn_ref(nsrv_route_t *rt, uint64_t conn_id) {
    if (conn_id == 0)
        return;
    rt_conn_t *c;
    HASH_FIND(hh, rt->conns, &conn_id, sizeof conn_id, c);
    if (!c) {
        c = nsrv_calloc(1, sizeof *c);
        c->conn_id = conn_id;
        HASH_ADD(hh, rt->conns, conn_id, sizeof c->conn_id, c);
    }
    c->refs++;
}

static void conn_unref(nsrv_route_t *rt, uint64_t conn_id) {
    if (conn_id == 0)
        return;
    rt_conn_t *c;
    HASH_FIND(hh, rt->conns, &conn_id, sizeof conn_id, c);
    if (c && --c->refs == 0) {
        HASH_DEL(rt->conns, c);
        nsrv_free(c);
    }
}

/* ---- live table ---- */

rt_live_t *nsrv__route_live_find(const nsrv_route_t *rt, const char *cluster, const char *addr) {
    if (!cluster || !addr || !rt->live)
        return NULL;
    rt_live_t *l;
    FIND_BY_CLUSTER_ADDR(rt->live, cluster, addr, l);
    return l;
}

rt_live_t *nsrv__route_live_put(nsrv_route_t *rt, const nsrv_register_req_t *req,
                                const nsrv_data_version_t *dv, uint64_t now_ms) {
    const char *cluster = req->cluster, *addr = req->broker_addr;
    bool direct = req->peer_last_seen_ms == 0;
    rt_live_t *l = nsrv__route_live_find(rt, cluster, addr);
    if (!l) {
        l = nsrv_calloc(1, sizeof *l);
        key_init(&l->k, cluster, addr);
        l->created_ms = now_ms;
        HASH_ADD_KEYPTR(hh, rt->live, l->k.key, l->k.key_len, l);
        nsrv_log_info("ROUTE", "new broker registered '%s' in cluster '%s'%s", addr, cluster,
                      direct ? "" : " (learned from a peer)");
    }
    if (direct) {
        if (l->conn_id != req->conn_id) {
            conn_unref(rt, l->conn_id);
            conn_ref(rt, req->conn_id);
        }
        l->conn_id = req->conn_id;
        l->last_direct_ms = now_ms;
        if (now_ms > l->last_seen_ms)
            l->last_seen_ms = now_ms;
    } else if (req->peer_last_seen_ms > l->last_seen_ms) {
        l->last_seen_ms = req->peer_last_seen_ms;
    }
    l->timeout_ms = req->timeout_ms > 0 ? req->timeout_ms : NSRV_ROUTE_DEFAULT_TIMEOUT_MS;
    l->dv = *dv;
    nsrv_free(l->ha_addr);
    l->ha_addr = req->ha_server_addr ? nsrv_strdup(req->ha_server_addr) : NULL;
    if (!l->name || strcmp(l->name, req->broker_name) != 0) {
        nsrv_free(l->name);
        l->name = nsrv_strdup(req->broker_name);
    }
    l->id = req->broker_id;
    l->acting_master = req->acting_master;
    /* A shorter timeout or an older peer time can move the deadline earlier. */
    uint64_t d = live_deadline(l);
    if (d < rt->next_expiry)
        rt->next_expiry = d;
    return l;
}

static void live_free(nsrv_route_t *rt, rt_live_t *l) {
    HASH_DEL(rt->live, l);
    conn_unref(rt, l->conn_id);
    nsrv_free(l->ha_addr);
    nsrv_free(l->name);
    nsrv_free(l->k.key);
    nsrv_free(l);
}

void nsrv__route_live_remove(nsrv_route_t *rt, const char *cluster, const char *addr) {
    rt_live_t *l = nsrv__route_live_find(rt, cluster, addr);
    if (l)
        live_free(rt, l);
}

/* A heartbeat: only moves the deadline later, so the cached bound stays valid. */
static void live_touch(rt_live_t *l, uint64_t now_ms) {
    l->last_direct_ms = now_ms;
    if (now_ms > l->last_seen_ms)
        l->last_seen_ms = now_ms;
}

/* ---- filter servers ---- */

const rt_filter_t *nsrv__route_filter_find(const nsrv_route_t *rt, const char *cluster,
                                           const char *addr) {
    if (!rt->filters)
        return NULL;
    rt_filter_t *f;
    FIND_BY_CLUSTER_ADDR(rt->filters, cluster, addr, f);
    return f;
}

static void filter_free(nsrv_route_t *rt, rt_filter_t *f) {
    HASH_DEL(rt->filters, f);
    for (size_t i = 0; i < f->n; i++)
        nsrv_free(f->servers[i]);
    nsrv_free(f->servers);
    nsrv_free(f->k.key);
    nsrv_free(f);
}

/* Routes show filterServerTable[(BrokerData.cluster, addr)] for each address of
 * each BrokerData in them: invalidate exactly the groups that hold addr. */
static void invalidate_addr(nsrv_route_t *rt, const char *cluster, const char *addr) {
    for (rt_bname_t *b = rt->bnames; b; b = b->hh.next) {
        if (!b->present || strcmp(b->cluster, cluster) != 0)
            continue;
        for (size_t i = 0; i < b->n_addrs; i++) {
            if (strcmp(b->addrs[i].addr, addr) == 0) {
                nsrv__route_bname_changed(rt, b);
                break;
            }
        }
    }
}

void nsrv__route_filter_remove(nsrv_route_t *rt, const char *cluster, const char *addr) {
    rt_filter_t *f = (rt_filter_t *)nsrv__route_filter_find(rt, cluster, addr);
    if (!f)
        return;
    filter_free(rt, f);
    invalidate_addr(rt, cluster, addr);
}

void nsrv__route_filter_set(nsrv_route_t *rt, const char *cluster, const char *addr,
                            const char *const *servers, size_t n) {
    if (n == 0) {
        nsrv__route_filter_remove(rt, cluster, addr);
        return;
    }
    rt_filter_t *f = (rt_filter_t *)nsrv__route_filter_find(rt, cluster, addr);
    if (f && f->n == n) {
        size_t i = 0;
        while (i < n && nsrv__route_str_eq_null(f->servers[i], servers[i]))
            i++;
        if (i == n)
            return; /* unchanged: keep the cached routes */
    }
    if (!f) {
        f = nsrv_calloc(1, sizeof *f);
        key_init(&f->k, cluster, addr);
        HASH_ADD_KEYPTR(hh, rt->filters, f->k.key, f->k.key_len, f);
    } else {
        for (size_t i = 0; i < f->n; i++)
            nsrv_free(f->servers[i]);
        nsrv_free(f->servers);
    }
    f->servers = nsrv_calloc(n, sizeof f->servers[0]);
    f->n = n;
    for (size_t i = 0; i < n; i++)
        f->servers[i] = nsrv_strdup(servers[i] ? servers[i] : "");
    invalidate_addr(rt, cluster, addr);
}

/* ---- removal of a live entry (expiry, connection close) ---- */

/*
 * 5.x onChannelDestroy / setupUnRegisterRequest: the unregister request is
 * built from the first BrokerData of the same cluster holding the address.
 * When there is none, Java submits nothing and leaves the live entry in place
 * forever (re-closing its channel on every scan); nsrvd drops the live and
 * filter entries anyway, which no reply can tell apart except that it does
 * not leak.
 */
static void drop_live(nsrv_route_t *rt, rt_live_t *l, const char *why) {
    char *key = nsrv_strndup(l->k.key, l->k.key_len); /* l is freed below */
    const char *cluster = key, *addr = key + strlen(key) + 1;
    const rt_bname_t *owner = NULL;
    int64_t id = 0;
    for (const rt_bname_t *b = rt->bnames; b && !owner; b = b->hh.next) {
        if (!b->present || strcmp(b->cluster, cluster) != 0)
            continue;
        for (size_t i = 0; i < b->n_addrs; i++) {
            if (strcmp(b->addrs[i].addr, addr) == 0) {
                owner = b;
                id = b->addrs[i].id;
                break;
            }
        }
    }
    nsrv_log_notice("ROUTE", "broker '%s' in cluster '%s' (%s) unregistered: %s", addr, cluster,
                    owner ? owner->name : "no broker data", why);
    if (owner) {
        char *name = nsrv_strdup(owner->name); /* the node may be freed */
        nsrv__route_unregister(rt, cluster, addr, name, id);
        nsrv_free(name);
    } else {
        live_free(rt, l);
        nsrv__route_filter_remove(rt, cluster, addr);
    }
    nsrv_free(key);
}

size_t nsrv_route_conn_closed(nsrv_route_t *rt, uint64_t conn_id, uint64_t now_ms) {
    NSRV_UNUSED(now_ms);
    if (conn_id == 0)
        return 0;
    rt_conn_t *c;
    HASH_FIND(hh, rt->conns, &conn_id, sizeof conn_id, c);
    if (!c)
        return 0; /* a client, or a broker that re-registered elsewhere */
    size_t n = 0;
    rt_live_t *l, *tmp;
    HASH_ITER(hh, rt->live, l, tmp) {
        if (l->conn_id == conn_id) {
            drop_live(rt, l, "connection closed");
            n++;
        }
    }
    return n;
}

/* ---- expiry ---- */

/*
 * One full pass. Removing an entry never removes another live entry, so
 * HASH_ITER stays valid. The callback runs after the pass, on a private copy
 * of the ids, because it may call back into rt.
 */
static size_t expire_pass(nsrv_route_t *rt, uint64_t now_ms, const rt_live_t *keep) {
    rt->stats.expire_passes++;
    uint64_t next = UINT64_MAX;
    uint64_t *closes = NULL;
    size_t n_closes = 0, cap = 0, removed = 0;
    rt_live_t *l, *tmp;
    HASH_ITER(hh, rt->live, l, tmp) {
        uint64_t d = live_deadline(l);
        if (l == keep || now_ms <= d) {
            if (d < next)
                next = d;
            continue;
        }
        if (l->conn_id) {
            if (n_closes == cap) {
                cap = cap ? cap * 2 : 8;
                closes = nsrv_realloc(closes, cap * sizeof closes[0]);
            }
            closes[n_closes++] = l->conn_id;
        }
        drop_live(rt, l, "heartbeat timeout");
        removed++;
    }
    rt->next_expiry = next;
    rt->stats.brokers_expired += removed;
    void (*cb)(void *, uint64_t) = rt->close_cb;
    void *ud = rt->close_ud;
    for (size_t i = 0; cb && i < n_closes; i++)
        cb(ud, closes[i]);
    nsrv_free(closes);
    return removed;
}

size_t nsrv_route_expire(nsrv_route_t *rt, uint64_t now_ms) {
    return expire_pass(rt, now_ms, NULL);
}

/*
 * Read-time filtering. next_expiry is a lower bound of every deadline: it is
 * exact after a pass, lowered when an entry gets an earlier deadline, and
 * untouched by heartbeats and removals, which only move deadlines later or
 * drop them. So while now_ms <= next_expiry nothing can be expired and the
 * check is one comparison.
 */
void nsrv__route_expire_due(nsrv_route_t *rt, uint64_t now_ms, const rt_live_t *keep) {
    if (now_ms > rt->next_expiry)
        expire_pass(rt, now_ms, keep);
}

/* ---- heartbeats ---- */

bool nsrv_route_query_data_version(nsrv_route_t *rt, const char *cluster, const char *addr,
                                   const nsrv_data_version_t *incoming, uint64_t now_ms,
                                   nsrv_data_version_t *stored, bool *has_stored) {
    *has_stored = false;
    nsrv__route_expire_due(rt, now_ms, NULL);
    rt_live_t *l = nsrv__route_live_find(rt, cluster, addr);
    bool changed = !l || !incoming || !nsrv_data_version_eq(&l->dv, incoming);
    if (l) {
        /* 5.x refreshes always; 4.9.x only when unchanged. */
        live_touch(l, now_ms);
        *stored = l->dv;
        *has_stored = true;
    }
    return changed;
}

void nsrv_route_broker_heartbeat(nsrv_route_t *rt, const char *cluster, const char *addr,
                                 uint64_t now_ms) {
    nsrv__route_expire_due(rt, now_ms, NULL);
    rt_live_t *l = nsrv__route_live_find(rt, cluster, addr);
    if (l)
        live_touch(l, now_ms);
}

void nsrv__route_live_free_all(nsrv_route_t *rt) {
    rt_live_t *l, *lt;
    HASH_ITER(hh, rt->live, l, lt) {
        live_free(rt, l);
    }
    rt_filter_t *f, *ft;
    HASH_ITER(hh, rt->filters, f, ft) {
        filter_free(rt, f);
    }
    rt_conn_t *c, *ct;
    HASH_ITER(hh, rt->conns, c, ct) {
        HASH_DEL(rt->conns, c);
        nsrv_free(c);
    }
}
