/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The topic lookup of the route table's hot path (GET_ROUTEINFO_BY_TOPIC): an
 * open-addressing table of (hash, topic) pairs, at most half full, so a lookup
 * is one hash of the name, usually one cache line of slots and one compare of
 * the name. The uthash table rt->topics keeps the iteration order the topic
 * lists use; this index only finds. Loop thread only.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

struct rt_topic;

typedef struct {
    uint32_t hash; /* of topic->name; 0 is a free slot (hashes are never 0) */
    struct rt_topic *topic;
} rt_tslot_t;

typedef struct {
    rt_tslot_t *slots;
    size_t cap; /* a power of two, or 0 */
    size_t n;
} rt_topic_index_t;

uint32_t nsrv__tindex_hash(const char *name);
/* Adds a topic whose name is not in the index yet. */
void nsrv__tindex_put(rt_topic_index_t *ix, struct rt_topic *t, const char *name);
void nsrv__tindex_del(rt_topic_index_t *ix, const struct rt_topic *t, const char *name);
/* The topic named name (by its name as stored in the topic), or NULL. */
struct rt_topic *nsrv__tindex_get(const rt_topic_index_t *ix, const char *name);
void nsrv__tindex_free(rt_topic_index_t *ix);
