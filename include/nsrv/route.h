/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The route table: RocketMQ's RouteInfoManager (proto/route.md) for one NameServer.
 *
 * Pure code: no I/O, no clock. Every call that depends on liveness takes the
 * caller's monotonic time `now_ms`. Loop thread only: the table has no locks.
 *
 * Glossary (Java names in brackets):
 *  - topic table [topicQueueTable]: topic -> per broker name QueueData
 *    {readQueueNums, writeQueueNums, perm, topicSysFlag}.
 *  - broker data [brokerAddrTable]: broker name (a replica group) -> BrokerData
 *    {cluster, brokerAddrs: id -> "ip:port", zoneName, enableActingMaster}.
 *  - cluster table [clusterAddrTable]: cluster -> set of broker names.
 *  - live table [brokerLiveTable]: (cluster, broker address) -> last heartbeat,
 *    timeout, DataVersion, the connection that last registered, haServerAddr.
 *  - filter servers [filterServerTable], mapping infos
 *    [topicQueueMappingInfoTable]: legacy / static-topic extras.
 *
 * Liveness. A live entry expires when last_seen_ms + timeout_ms < now_ms
 * (strict, as Java). Expired entries are removed by nsrv_route_expire (the
 * periodic scan) AND lazily by every read below, which first drops whatever
 * is already past its deadline. So no answer depends on when the periodic
 * scan last ran: a broker past its timeout is never in a route, cluster info,
 * topic list or data-version answer. The lazy check costs one comparison
 * while nothing is due (the table keeps a lower bound of the earliest
 * deadline).
 *
 * Unregistration (UNREGISTER_BROKER, connection close, expiry) is applied
 * synchronously; a 5.x Java server queues it, which only adds the
 * stale-unregister race of apache/rocketmq#11043 (see route_live.c).
 *
 * Route bodies (GET_ROUTEINFO_BY_TOPIC) are encoded once per topic and JSON
 * mode and served from a cache until something they depend on changes.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "nsrv/arena.h"
#include "nsrv/buf.h"
#include "nsrv/rcbuf.h"
#include "nsrv/route_types.h"

typedef struct nsrv_route nsrv_route_t;

/* Runtime switches of NamesrvConfig that the route table reads (proto/requests.md §5.1). */
typedef struct {
    bool support_acting_master;                 /* supportActingMaster (default false) */
    bool delete_topic_with_broker_registration; /* deleteTopicWithBrokerRegistration (false) */
} nsrv_route_opts_t;

/* Live-entry timeout when a broker sends no heartbeatTimeoutMillis (proto/route.md §2). */
#define NSRV_ROUTE_DEFAULT_TIMEOUT_MS 120000

/* Topics with this prefix are exempt from the acting-master rewrite (proto/route.md §6). */
#define NSRV_ROUTE_SYNC_MEMBER_PREFIX "rmq_sys_SYNC_BROKER_MEMBER_"

/** Creates an empty table with default options. Never NULL (aborts on OOM). */
nsrv_route_t *nsrv_route_create(void);
/** Frees the table and sets *rt = NULL. Accepts NULL and *rt == NULL. */
void nsrv_route_destroy(nsrv_route_t **rt);
/** Copies *opts. May be called at any time (UPDATE_NAMESRV_CONFIG). */
void nsrv_route_set_opts(nsrv_route_t *rt, const nsrv_route_opts_t *opts);

/**
 * Sets the callback told about each live entry removed by expiry, with the id
 * of the connection that last registered it (never 0), so the server can close
 * that connection as Java's scanNotActiveBroker does. It runs after the table
 * is updated, from any call that takes now_ms (reads included, since they
 * expire lazily) - possibly for the connection whose request is being
 * processed - so the server should close asynchronously. It may call back into
 * rt. cb NULL disables it.
 */
void nsrv_route_set_conn_close_cb(nsrv_route_t *rt, void (*cb)(void *ud, uint64_t conn_id),
                                  void *ud);

/* One REGISTER_BROKER request, already decoded. All strings borrowed. */
typedef struct {
    const char *cluster, *broker_addr, *broker_name, *ha_server_addr; /* ha may be NULL */
    const char *zone_name; /* ext __ZONE_NAME, NULL if absent */
    int64_t broker_id;
    int64_t timeout_ms; /* ext heartbeatTimeoutMillis; <= 0 = absent -> 120000 */
    int acting_master;  /* ext enableActingMaster: -1 absent (old broker), 0 false, 1 true */
    const nsrv_register_body_t *body; /* NULL = no body: no topics, DataVersion {0,0,0} */
    uint64_t conn_id;                 /* connection it arrived on; 0 = none */
    /* 0 for a broker's own REGISTER_BROKER (a direct heartbeat). Otherwise the
     * registration was pulled from a peer (gossip) and this is when the broker
     * was last heard directly anywhere, on our monotonic clock: it never resets
     * our direct age, never rebinds the entry's connection, and a registration
     * already past its timeout is ignored (a pull cannot resurrect). */
    uint64_t peer_last_seen_ms;
} nsrv_register_req_t;

typedef enum {
    NSRV_REG_OK,
    NSRV_REG_FAILED /* "register broker failed": single topic before the first full registration */
} nsrv_reg_status_t;

typedef struct {
    nsrv_reg_status_t status;
    /* For a slave whose master has a live entry: the master's address and the
     * MASTER's haServerAddr. Empty strings when they are not to be returned. */
    char master_addr[256];
    char ha_server_addr[256];
} nsrv_register_result_t;

/**
 * REGISTER_BROKER: the 5.x registerBroker algorithm (proto/route.md §3), also for
 * 4.9.x brokers (acting_master -1), as a 5.x Java NameServer does.
 * A request without cluster, address or name changes nothing (Java hits an
 * NPE that it swallows) and reports NSRV_REG_OK with empty fields.
 * @param res always fully written
 */
void nsrv_route_register_broker(nsrv_route_t *rt, const nsrv_register_req_t *req, uint64_t now_ms,
                                nsrv_register_result_t *res);

/**
 * UNREGISTER_BROKER, applied at once by the 5.x procedure (proto/route.md §5): the live
 * entry goes, the address is removed from the broker name's BrokerData by
 * value, an emptied group is dropped with its queue data. NULL arguments: no-op.
 */
void nsrv_route_unregister_broker(nsrv_route_t *rt, const char *cluster, const char *addr,
                                  const char *name, int64_t id);

/**
 * QUERY_DATA_VERSION (proto/requests.md §2.4, 5.x rule). Returns `changed`: true when there
 * is no live entry for (cluster, addr), incoming is NULL (no body), or the
 * stored DataVersion differs. A live entry is refreshed (it counts as a
 * heartbeat), and its stored version copied to *stored with *has_stored set;
 * otherwise *has_stored is false and *stored untouched.
 */
bool nsrv_route_query_data_version(nsrv_route_t *rt, const char *cluster, const char *addr,
                                   const nsrv_data_version_t *incoming, uint64_t now_ms,
                                   nsrv_data_version_t *stored, bool *has_stored);

/** BROKER_HEARTBEAT (proto/requests.md §2.7): refreshes the live entry if there is one. */
void nsrv_route_broker_heartbeat(nsrv_route_t *rt, const char *cluster, const char *addr,
                                 uint64_t now_ms);

/**
 * The connection conn_id closed (or errored, or went idle). Unregisters every
 * live entry whose LAST registration arrived on it. Java 5.x unregisters only
 * the first such entry; doing all is right for a process that hosts several
 * brokers on one connection. A broker that re-registered on another
 * connection is not touched (apache/rocketmq#11043). O(1) for connections
 * that never registered a broker. Does not call the close callback.
 * @return number of live entries removed
 */
size_t nsrv_route_conn_closed(nsrv_route_t *rt, uint64_t conn_id, uint64_t now_ms);

/**
 * The expiry scan (scanNotActiveBroker, proto/route.md §7): removes every live entry
 * with last_seen_ms + timeout_ms < now_ms by the 5.x unregister procedure and
 * reports its connection through the close callback.
 * @return number of live entries removed
 */
size_t nsrv_route_expire(nsrv_route_t *rt, uint64_t now_ms);

typedef enum {
    NSRV_ROUTE_JSON_DEFAULT, /* fastjson default: bare numeric keys (request version <
                                NSRV_MQ_V4_9_4) */
    NSRV_ROUTE_JSON_STANDARD /* standard JSON: quoted, sorted keys, \uXXXX, \/ */
} nsrv_route_json_t;

/**
 * GET_ROUTEINFO_BY_TOPIC body (TopicRouteData, proto/route.md §6, §9).
 * @param order_conf KV ORDER_TOPIC_CONFIG[topic] when orderMessageEnable, else
 *                   NULL; written as orderTopicConf (part of the cache key)
 * @param zone       non-NULL and not blank: apply the zone filter (proto/requests.md §2.8)
 *                   and encode in DEFAULT mode whatever @p mode says; uncached
 * @param body,len   on success: bytes owned by the table, valid until the next
 *                   call into rt (no copy on the hot path)
 * @return 0, or -ENOENT when there is no route (TOPIC_NOT_EXIST)
 */
int nsrv_route_topic_route(nsrv_route_t *rt, const char *topic, nsrv_route_json_t mode,
                           const char *order_conf, const char *zone, uint64_t now_ms,
                           const char **body, size_t *len);

/**
 * nsrv_route_topic_route that also says where a cached body lives: *shared is
 * the table's reference-counted body (take a reference with nsrv_rcbuf_ref to
 * keep it past the next call into rt), or NULL for an uncached (zone) body.
 */
int nsrv_route_topic_route_shared(nsrv_route_t *rt, const char *topic, nsrv_route_json_t mode,
                                  const char *order_conf, const char *zone, uint64_t now_ms,
                                  const char **body, size_t *len, nsrv_rcbuf_t **shared);

/** GET_BROKER_CLUSTER_INFO body (proto/requests.md §3.3), always default mode. Appends to out. */
void nsrv_route_cluster_info(nsrv_route_t *rt, uint64_t now_ms, nsrv_buf_t *out);

/**
 * GET_BROKER_MEMBER_GROUP body (proto/requests.md §2.20, §3.6): the addresses of broker_name;
 * cluster and broker_name echo the request (omitted when NULL). Appends to out.
 */
void nsrv_route_member_group(nsrv_route_t *rt, const char *cluster, const char *broker_name,
                             uint64_t now_ms, nsrv_buf_t *out);

/** WIPE_WRITE_PERM_OF_BROKER: clears PERM_WRITE; returns the topics touched (proto/requests.md
 * §2.10). */
int nsrv_route_wipe_write_perm(nsrv_route_t *rt, const char *broker_name);
/** ADD_WRITE_PERM_OF_BROKER: sets perm to exactly 6; returns the topics touched. */
int nsrv_route_add_write_perm(nsrv_route_t *rt, const char *broker_name);

/** DELETE_TOPIC_IN_NAMESRV (proto/requests.md §2.12). cluster NULL or "": the whole topic. */
void nsrv_route_delete_topic(nsrv_route_t *rt, const char *topic, const char *cluster);

/**
 * REGISTER_TOPIC_IN_NAMESRV (proto/requests.md §2.13): merges qds into the topic; stops silently
 * at the first QueueData whose broker name has no BrokerData (a new topic is
 * then not created; an existing one keeps what was merged before).
 */
void nsrv_route_register_topic(nsrv_route_t *rt, const char *topic, const nsrv_queue_data_t *qds,
                               size_t n);

typedef enum {
    NSRV_TOPICS_ALL,               /* 206 */
    NSRV_TOPICS_UNIT,              /* 311: first QueueData's flag has UNIT */
    NSRV_TOPICS_UNIT_SUB,          /* 312: has UNIT_SUB */
    NSRV_TOPICS_UNIT_SUB_NOT_UNIT, /* 313: has UNIT_SUB and not UNIT */
} nsrv_topic_filter_t;

/** Appends {"topicList":[...]} (proto/requests.md §2.11, §2.17, §3.4). */
void nsrv_route_topic_list(nsrv_route_t *rt, nsrv_topic_filter_t f, uint64_t now_ms,
                           nsrv_buf_t *out);
/** GET_TOPICS_BY_CLUSTER (proto/requests.md §2.15); an unknown cluster gives {"topicList":[]}. */
void nsrv_route_topics_by_cluster(nsrv_route_t *rt, const char *cluster, uint64_t now_ms,
                                  nsrv_buf_t *out);
/** GET_SYSTEM_TOPIC_LIST_FROM_NS (proto/requests.md §2.16): cluster and broker names, plus
 * brokerAddr. */
void nsrv_route_system_topic_list(nsrv_route_t *rt, uint64_t now_ms, nsrv_buf_t *out);

/** Live entries (for logs and status). Does not expire anything. */
size_t nsrv_route_broker_count(const nsrv_route_t *rt);

/* Table sizes for /metrics gauges (O(1), no expiry). */
typedef struct {
    size_t topics;       /* topics with at least one queue entry */
    size_t clusters;     /* cluster names */
    size_t broker_names; /* broker groups (brokerName) */
    size_t live_brokers; /* live broker addresses */
    size_t route_bodies; /* distinct cached route bodies (topics with equal routes share one) */
} nsrv_route_sizes_t;
void nsrv_route_sizes(const nsrv_route_t *rt, nsrv_route_sizes_t *out);

/* Counters for status output and for tests that prove the cache works. */
typedef struct {
    uint64_t route_cache_hits;   /* topic_route answered from the cache */
    uint64_t route_cache_builds; /* route bodies encoded into the cache */
    uint64_t route_body_shares;  /* of those, bodies another topic's buffer already held */
    uint64_t expire_passes;      /* full passes over the live table */
    uint64_t brokers_expired;    /* live entries removed by expiry */
} nsrv_route_stats_t;

void nsrv_route_get_stats(const nsrv_route_t *rt, nsrv_route_stats_t *out);

/* ---- peer (gossip) view of the live table: route_peer.c ---- */

/* One live entry, borrowed; valid until the next call into rt. */
typedef struct {
    const char *cluster, *broker_name, *broker_addr, *ha_server_addr; /* ha may be NULL */
    const char *zone_name;                                            /* NULL if unset */
    int64_t broker_id;
    int acting_master; /* as registered: -1 old broker, 0, 1 */
    int64_t timeout_ms;
    nsrv_data_version_t data_version;
    uint64_t last_direct_ms; /* 0: never heard directly by this node */
    uint64_t last_seen_ms;   /* max of direct and peer-reported; expiry counts from it */
    uint64_t created_ms;     /* when the entry appeared: a broker that returns gets a new one */
    uint64_t conn_id;
} nsrv_route_live_info_t;

/** Calls cb for every live entry that is not past its timeout at now_ms. */
void nsrv_route_foreach_live(nsrv_route_t *rt, uint64_t now_ms,
                             void (*cb)(void *ud, const nsrv_route_live_info_t *info), void *ud);

/** Looks up one live entry; false if absent or expired. */
bool nsrv_route_live_info(nsrv_route_t *rt, const char *cluster, const char *addr, uint64_t now_ms,
                          nsrv_route_live_info_t *out);

typedef enum {
    NSRV_PEER_SEEN_UNKNOWN = -1, /* no live entry: pull the registration */
    NSRV_PEER_SEEN_SAME = 0,     /* same data version; last_seen raised if later */
    NSRV_PEER_SEEN_NEWER = 1,    /* the peer has a newer data version: pull it */
    NSRV_PEER_SEEN_OLDER = 2,    /* ours is newer; last_seen raised all the same */
} nsrv_peer_seen_t;

/**
 * A peer reports that it heard (cluster, addr) directly at last_seen_ms (already
 * mapped onto our monotonic clock) with data version dv. Raises the entry's
 * last_seen (a max-merge: never lowers it, never touches last_direct).
 * Versions are ordered as DataVersion.compare: stateVersion, counter, timestamp.
 */
nsrv_peer_seen_t nsrv_route_peer_seen(nsrv_route_t *rt, const char *cluster, const char *addr,
                                      const nsrv_data_version_t *dv, uint64_t last_seen_ms,
                                      uint64_t now_ms);

/**
 * A peer relays an explicit UNREGISTER_BROKER (a tombstone) that happened at
 * event_ms on our clock. Applied only if our entry was last seen at or before
 * event_ms: a later direct heartbeat (a broker restart) wins. Returns true if
 * the broker was unregistered.
 */
bool nsrv_route_peer_unregister(nsrv_route_t *rt, const char *cluster, const char *addr,
                                const char *name, int64_t id, uint64_t event_ms, uint64_t now_ms);

/**
 * Rebuilds the registration body a peer needs to serve routes for the broker
 * at (cluster, addr): its group's queue data, its mapping infos and filter
 * servers, and its data version. Strings are allocated in arena.
 * Returns 0, or -ENOENT if there is no such live entry.
 */
int nsrv_route_export_body(nsrv_route_t *rt, const char *cluster, const char *addr,
                           nsrv_arena_t *arena, nsrv_register_body_t *out);

/* Orders data versions as Java's DataVersion.compare: <0, 0, >0. */
int nsrv_data_version_cmp(const nsrv_data_version_t *a, const nsrv_data_version_t *b);
