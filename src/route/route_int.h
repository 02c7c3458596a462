/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Route table internals shared by the route_*.c files. Not for other modules.
 *
 * Layout. Broker names are interned as rt_bname_t nodes. A node carries the
 * BrokerData of that name (when `present`) and a vector of the topics that
 * have a QueueData of it, so "all topics of broker X" (unregister cleanup,
 * wipe/add perm, cache invalidation) walks only X's topics instead of the
 * whole topic table; that vector is unordered (swap-remove), and removing one
 * topic from it searches it, which only the rare single-topic removals do.
 * Topics keep their QueueData in insertion order, which is the order routes
 * are written in, and the table keeps its topics in creation order
 * (topic_index.h), the order of the topic lists (Java uses hash order;
 * clients sort).
 *
 * Memory (a million topics must fit in tens of megabytes):
 * QueueData values are interned (rt_qd_t: immutable, refcounted, found by
 * value), because all topics of a broker usually have the same queue numbers,
 * perm and flags; a topic refers to them by 32-bit id (rt_qref_t): one id
 * when it has one QueueData, else the id of an array of ids. A change of a
 * QueueData is a new reference, never a write into a shared node. A topic is
 * a record in the topic arena (topic_index.h: 8 bytes and its name, no
 * allocation of its own), and broker vectors hold 32-bit positions, renumbered
 * when the arena is compacted. The cached route bodies exist only for topics
 * that were queried since their last change (rt->caches, by id).
 *
 * Cache invalidation. A topic's cached bodies depend on its QueueData, the
 * BrokerData of each broker name in it, filter servers of those addresses,
 * its mapping infos and opts.support_acting_master. Every mutation of one of
 * those calls nsrv__route_topic_invalidate (directly or through
 * nsrv__route_bname_changed). Pure refreshes (heartbeats, unchanged
 * re-registrations) touch none of them.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "nsrv/alloc.h"
#include "nsrv/buf.h"
#include "nsrv/common.h"
#include "nsrv/route.h"

#include "nsrv/rcbuf.h"
#include "nsrv/uthash.h"
#include "route_body_intern.h"
#include "topic_index.h"

typedef struct rt_qd rt_qd_t;
typedef struct rt_bname rt_bname_t;

typedef struct {
    int64_t id;
    char *addr;
} rt_addr_t;

struct rt_bname {
    char *name;
    UT_hash_handle hh;
    bool present;     /* a BrokerData exists for this name */
    char *cluster;    /* BrokerData.cluster (set when created, never updated, as Java) */
    char *zone;       /* BrokerData.zoneName, NULL when unset */
    bool acting;      /* BrokerData.enableActingMaster */
    rt_addr_t *addrs; /* sorted by id; ids and addresses both unique */
    size_t n_addrs, cap_addrs;
    rt_tpos_t *topics; /* every topic with a QueueData of this name, unordered */
    uint32_t n_topics, cap_topics;
    uint32_t mark; /* scratch for set operations (see rt->mark_gen) */
};

/* A QueueData value, interned: shared by every topic that has it, never modified. */
struct rt_qd {
    /* The intern table's key: these five fields (RT_QD_KEY_LEN bytes, no padding). */
    rt_bname_t *bname;
    int32_t read_queue_nums, write_queue_nums, perm, topic_sys_flag;
    UT_hash_handle hh;
    uint32_t id;   /* in rt->qd_ids */
    uint32_t refs; /* references from topics */
};
#define RT_QD_KEY_LEN (offsetof(rt_qd_t, topic_sys_flag) + sizeof(int32_t))

/* Pointers by 32-bit id, ids of freed entries reused (a free entry holds the next free id,
 * tagged by its low bit, which no allocation has set). */
typedef struct {
    void **v;
    uint32_t n, cap;
    uint32_t free_head; /* a free id + 1, or 0 */
    uint32_t used;
} rt_idvec_t;

uint32_t nsrv__idvec_put(rt_idvec_t *iv, void *p);
void nsrv__idvec_del(rt_idvec_t *iv, uint32_t id);
void nsrv__idvec_free(rt_idvec_t *iv);
static inline void *nsrv__idvec_get(const rt_idvec_t *iv, uint32_t id) {
    return iv->v[id];
}
static inline bool nsrv__idvec_live(const rt_idvec_t *iv, uint32_t id) {
    return id < iv->n && !((uintptr_t)iv->v[id] & 1);
}

typedef struct {
    bool valid;
    char *order_conf; /* what it was built with; NULL = none */
    /* Shared with connections still sending it and with topics of the same route
     * bytes (rt->bodies): invalidation drops this topic's reference only. */
    nsrv_rcbuf_t *body;
} rt_cache_t;

/* A topic's cached route bodies, indexed by nsrv_route_json_t. */
typedef struct {
    rt_cache_t mode[2];
} rt_tcache_t;

/* The QueueData ids of a topic that has two or more, in insertion order. Its capacity is
 * the power of two at or above n (it grows by doubling), so it is not stored. */
typedef struct {
    uint32_t n; /* >= 2 */
    uint32_t q[];
} rt_qd_array_t;

typedef struct {
    char *name;
    UT_hash_handle hh;
} rt_name_t;

typedef struct {
    char *name;
    UT_hash_handle hh;
    rt_name_t *names; /* broker-name set */
} rt_cluster_t;

/* Key of the live and filter tables: cluster, NUL, address. */
typedef struct {
    char *key;
    size_t key_len;
    const char *cluster, *addr; /* into key */
} rt_key_t;

typedef struct {
    rt_key_t k;
    UT_hash_handle hh;
    uint64_t last_direct_ms; /* last REGISTER_BROKER / QUERY_DATA_VERSION / BROKER_HEARTBEAT */
    uint64_t last_seen_ms;   /* expiry clock; >= last_direct_ms (gossip may raise it) */
    uint64_t created_ms;     /* when this entry appeared (a returning broker gets a new one) */
    int64_t timeout_ms;
    nsrv_data_version_t dv;
    uint64_t conn_id;
    char *ha_addr;
    char *name; /* the registering broker's name and id, as last registered */
    int64_t id;
    int acting_master; /* -1 old broker, 0, 1 */
} rt_live_t;

typedef struct {
    rt_key_t k;
    UT_hash_handle hh;
    char **servers;
    size_t n;
} rt_filter_t;

/* Live entries per registering connection, so closes of client connections are O(1). */
typedef struct {
    uint64_t conn_id;
    size_t refs;
    UT_hash_handle hh;
} rt_conn_t;

typedef struct {
    char *bname; /* key within the topic */
    char *topic, *scope;
    int64_t epoch;
    int32_t total_queues;
    bool dirty;
    nsrv_int_pair_t *ids; /* sorted by key, unique keys */
    size_t n_ids;
} rt_mapping_t;

typedef struct {
    char *topic;
    UT_hash_handle hh;
    rt_mapping_t *maps; /* sorted by bname */
    size_t n, cap;
} rt_mtopic_t;

struct nsrv_route {
    nsrv_route_opts_t opts;
    rt_topic_index_t topic_index; /* every topic, in creation order, by name (topic_index.h) */
    rt_bname_t *bnames;
    rt_cluster_t *clusters;
    rt_live_t *live;
    rt_filter_t *filters;
    rt_conn_t *conns;
    rt_mtopic_t *mappings; /* never cleaned by delete or unregister, as Java */
    rt_qd_t *qd_table;     /* interned QueueData by value */
    rt_idvec_t qd_ids;     /* rt_qd_t by id */
    rt_idvec_t qd_arrays;  /* rt_qd_array_t by id */
    rt_idvec_t caches;     /* rt_tcache_t by id (rt_topic_t.cache) */
    /* Lower bound of the earliest live deadline; UINT64_MAX when none. */
    uint64_t next_expiry;
    void (*close_cb)(void *ud, uint64_t conn_id);
    void *close_ud;
    nsrv_buf_t scratch;      /* uncached (zone-filtered) route bodies */
    rt_body_intern_t bodies; /* the cached bodies, one buffer per distinct bytes */
    uint32_t mark_gen;
    nsrv_route_stats_t stats;
};

/* NULL-aware string equality (NULL equals only NULL). */
static inline bool nsrv__route_str_eq_null(const char *a, const char *b) {
    if (!a || !b)
        return a == b;
    return strcmp(a, b) == 0;
}

/* --- route_table.c --- */
rt_bname_t *nsrv__route_bname_find(const nsrv_route_t *rt, const char *name);
rt_bname_t *nsrv__route_bname_get(nsrv_route_t *rt, const char *name);
/* Frees the node when it has neither BrokerData nor QueueData. */
void nsrv__route_bname_release(nsrv_route_t *rt, rt_bname_t *b);
/* The BrokerData of b changed: invalidate every topic naming it. */
void nsrv__route_bname_changed(nsrv_route_t *rt, rt_bname_t *b);
const char *nsrv__route_bname_addr(const rt_bname_t *b, int64_t id);
/* Removes the entry whose address is addr (at most one); true if one was. */
bool nsrv__route_bname_remove_addr(rt_bname_t *b, const char *addr);
/* Sets addrs[id] = addr; returns true when that changed anything. */
bool nsrv__route_bname_put_addr(rt_bname_t *b, int64_t id, const char *addr, bool *was_empty);

rt_topic_t *nsrv__route_topic_find(const nsrv_route_t *rt, const char *name);
/* The QueueData ids of t, in insertion order; *n >= 1. Valid until t changes. */
const uint32_t *nsrv__route_qd_ids(const nsrv_route_t *rt, const rt_topic_t *t, size_t *n);
size_t nsrv__route_n_qds(const nsrv_route_t *rt, const rt_topic_t *t);
/* The i-th QueueData of t, i < nsrv__route_n_qds(). */
const rt_qd_t *nsrv__route_qd_at(const nsrv_route_t *rt, const rt_topic_t *t, size_t i);
static inline const rt_qd_t *nsrv__route_qd(const nsrv_route_t *rt, uint32_t id) {
    return (const rt_qd_t *)nsrv__idvec_get(&rt->qd_ids, id);
}
/* Releases what t refers to (QueueData, cached bodies); the record stays. */
void nsrv__route_topic_free(nsrv_route_t *rt, rt_topic_t *t);
/* Frees the intern table and the id arrays (the topics are freed). */
void nsrv__route_qd_free_all(nsrv_route_t *rt);
/* t's QueueData of b, or NULL. */
const rt_qd_t *nsrv__route_topic_qd(const nsrv_route_t *rt, const rt_topic_t *t,
                                    const rt_bname_t *b);
/* The topic at position pos (a live one: from a broker's vector). */
static inline rt_topic_t *nsrv__route_topic_at(const nsrv_route_t *rt, rt_tpos_t pos) {
    return nsrv__tindex_at(&rt->topic_index, pos);
}
/* t's cached route bodies: NULL when it has none. */
static inline rt_tcache_t *nsrv__route_tcache(const nsrv_route_t *rt, const rt_topic_t *t) {
    return t->cache ? (rt_tcache_t *)nsrv__idvec_get(&rt->caches, t->cache - 1) : NULL;
}
/* The same, allocated (empty) when it has none. */
rt_tcache_t *nsrv__route_tcache_get(nsrv_route_t *rt, rt_topic_t *t);
void nsrv__route_topic_invalidate(nsrv_route_t *rt, rt_topic_t *t);
/* Compacts the topic records when due (topic_index.h) and renumbers the broker vectors.
 * Called where no topic pointer or position is held: the ends of the public operations
 * that remove topics. */
void nsrv__route_tidy(nsrv_route_t *rt);
void nsrv__route_invalidate_all(nsrv_route_t *rt);
/* createAndUpdateQueueData: insert, or replace only if different. */
void nsrv__route_upsert_qd(nsrv_route_t *rt, const char *topic, rt_bname_t *b, int32_t read_q,
                           int32_t write_q, int32_t perm, int32_t sys_flag);
/* Gives t's QueueData of b the perm p (a new reference when it differs). */
void nsrv__route_set_perm(nsrv_route_t *rt, rt_topic_t *t, const rt_bname_t *b, int32_t p);
/* Removes b's QueueData from b->topics[k]'s topic (swap-removing entry k); drops the
 * topic when left empty. Does not release b. */
void nsrv__route_remove_qd_at(nsrv_route_t *rt, rt_bname_t *b, uint32_t k);
/* The same for topic t, found in b->topics by a search; nothing if t has none of b. */
void nsrv__route_remove_qd(nsrv_route_t *rt, rt_topic_t *t, rt_bname_t *b);

void nsrv__route_cluster_add(nsrv_route_t *rt, const char *cluster, const char *name);
rt_cluster_t *nsrv__route_cluster_find(const nsrv_route_t *rt, const char *cluster);

/* The 5.x unregister of one request (proto/route.md §5), live entry included. */
void nsrv__route_unregister(nsrv_route_t *rt, const char *cluster, const char *addr,
                            const char *name, int64_t id);

/* --- route_live.c --- */
rt_live_t *nsrv__route_live_find(const nsrv_route_t *rt, const char *cluster, const char *addr);
/* Inserts or replaces the live entry (registerBroker step 11). A direct
 * registration (req->peer_last_seen_ms == 0) sets last_direct to now and binds
 * the entry to req->conn_id; a peer import only raises last_seen. */
rt_live_t *nsrv__route_live_put(nsrv_route_t *rt, const nsrv_register_req_t *req,
                                const nsrv_data_version_t *dv, uint64_t now_ms);
void nsrv__route_live_remove(nsrv_route_t *rt, const char *cluster, const char *addr);
void nsrv__route_filter_set(nsrv_route_t *rt, const char *cluster, const char *addr,
                            const char *const *servers, size_t n);
const rt_filter_t *nsrv__route_filter_find(const nsrv_route_t *rt, const char *cluster,
                                           const char *addr);
void nsrv__route_filter_remove(nsrv_route_t *rt, const char *cluster, const char *addr);
/* Expires what is due, except `keep` (may be NULL). Cheap when nothing is due. */
void nsrv__route_expire_due(nsrv_route_t *rt, uint64_t now_ms, const rt_live_t *keep);
void nsrv__route_live_free_all(nsrv_route_t *rt);

/* --- route_mapping.c --- */
void nsrv__route_mapping_put(nsrv_route_t *rt, const nsrv_mapping_info_t *m);
const rt_mtopic_t *nsrv__route_mapping_find(const nsrv_route_t *rt, const char *topic);
/* Copies the mapping infos of broker name bname into arena. */
void nsrv__route_mapping_export(const nsrv_route_t *rt, const char *bname, nsrv_arena_t *arena,
                                nsrv_mapping_info_t **out, size_t *n);
void nsrv__route_mapping_free_all(nsrv_route_t *rt);

/* --- route_encode.c --- */
void nsrv__route_write_str(nsrv_buf_t *out, const char *s, nsrv_route_json_t mode);
void nsrv__route_write_addrs(nsrv_buf_t *out, const rt_bname_t *b, nsrv_route_json_t mode,
                             bool rewrite);
void nsrv__route_write_bd(nsrv_buf_t *out, const rt_bname_t *b, nsrv_route_json_t mode,
                          bool rewrite);
/* Encodes the route of t (pickupTopicRouteData + zone filter) into out.
 * Returns 0 or -ENOENT (no queue data or no broker data). */
int nsrv__route_encode_route(const nsrv_route_t *rt, const rt_topic_t *t, nsrv_route_json_t mode,
                             const char *order_conf, const char *zone, nsrv_buf_t *out);

/* For tests: checks every internal invariant; returns 0 or a negative line number. */
int nsrv__route_check(const nsrv_route_t *rt, uint64_t now_ms, char *why, size_t why_len);
