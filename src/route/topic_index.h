/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The route table's topics: an insertion-ordered array of topic pointers and,
 * for the hot path (GET_ROUTEINFO_BY_TOPIC), an open-addressing index of
 * (hash, position) pairs over it, at most half full. A lookup is one hash of
 * the name, usually one cache line of slots, one load from the array and one
 * compare of the name.
 *
 * Memory, per topic: 8 bytes of array (plus the tombstones of removed topics
 * until the next compaction) and 8-byte slots at 25-50 % load. The order array
 * is what the topic lists iterate (creation order, proto/requests.md §2.11);
 * a removed topic leaves a NULL that a later removal compacts away once the
 * tombstones are half the array, renumbering the positions in the slots. A
 * topic does not store its position: removal finds its slot by name. Loop
 * thread only.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

struct rt_topic;

typedef struct {
    uint32_t hash; /* of the topic's name; 0 is a free slot (hashes are never 0) */
    uint32_t pos;  /* in rt_topic_index_t.order */
} rt_tslot_t;

typedef struct {
    rt_tslot_t *slots;
    size_t cap;              /* a power of two, or 0 */
    size_t n;                /* topics */
    struct rt_topic **order; /* insertion order; NULL where a topic was removed */
    uint32_t n_order, cap_order;
} rt_topic_index_t;

uint32_t nsrv__tindex_hash(const char *name);
/* Appends t, whose name is not in the index yet. */
void nsrv__tindex_put(rt_topic_index_t *ix, struct rt_topic *t);
/* Removes t; may renumber the positions of the others (never their order). */
void nsrv__tindex_del(rt_topic_index_t *ix, const struct rt_topic *t);
/* The topic named name, or NULL. */
struct rt_topic *nsrv__tindex_get(const rt_topic_index_t *ix, const char *name);
/*
 * Runs the statement that follows with t (a declared topic pointer) set to each
 * topic, in creation order, removed ones skipped. The index must not change
 * while it runs.
 */
#define NSRV__TINDEX_FOREACH(ix, t)                                                                \
    for (uint32_t tix_i_ = 0; tix_i_ < (ix)->n_order; tix_i_++)                                    \
        if (((t) = (ix)->order[tix_i_]) == NULL) {                                                 \
        } else
/* Frees the index, not the topics. */
void nsrv__tindex_free(rt_topic_index_t *ix);
