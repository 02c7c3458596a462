/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The route table's topics: records in one creation-ordered arena and, for
 * the hot path (GET_ROUTEINFO_BY_TOPIC), an open-addressing index of 32-bit
 * slots, at most half full. A slot's low bits (pos_mask: as many as the
 * arena's capacity needs) hold 1 + a record's position, its high bits the same
 * bits of the name's hash (a tag). A lookup is one hash of the name, usually
 * one cache line of slots, and a name compare only where the tag matches: a
 * probe does not load the records it passes over (a dependent cache miss each
 * over a big table), so the found record is, nearly always, the only one read.
 * The tag has 32 - log2(arena / 2) bits: 14 for 10,000 topics of ~20-byte
 * names, 8 for 1M, none at an 8 GiB arena (every probe then compares names).
 *
 * Memory, per topic: its record (8 bytes and the name, 4-byte
 * aligned) and 4-byte slots at 25-50 % load; no allocation of its own. The
 * arena is what the topic lists walk (creation order, proto/requests.md
 * §2.11). A removed topic stays as a tombstone until a compaction slides the
 * live records down once the tombstones are half the arena; that moves every
 * record, so it runs only when the route table asks (nsrv__tindex_compact),
 * at a point where no one holds a topic pointer or position. Adding a topic
 * may move the arena too (realloc): a topic pointer is valid until the next
 * add. Loop thread only.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A topic's QueueData: an id in rt->qd_ids, or RT_QREF_MANY | an id in rt->qd_arrays
 * (route_int.h); RT_QREF_DEAD marks a removed topic's record. */
typedef uint32_t rt_qref_t;
#define RT_QREF_MANY 0x80000000u
#define RT_QREF_DEAD 0xffffffffu

/* A topic record: 4-byte aligned in the arena, its size given by its name. */
typedef struct rt_topic {
    rt_qref_t qref;
    uint32_t cache; /* 1 + id of its cached route bodies in rt->caches; 0 until queried */
    char name[];
} rt_topic_t;

/* A topic's position: its record's offset in the arena / 4. Stable until a compaction. */
typedef uint32_t rt_tpos_t;

typedef struct {
    uint32_t *slots;              /* tag | 1 + position (see above); 0 is a free slot */
    size_t cap;                   /* a power of two, or 0 */
    uint32_t pos_mask;            /* the slot bits of 1 + position: covers cap_arena / 4 */
    size_t n;                     /* live topics */
    char *arena;                  /* the records, in creation order */
    size_t used, cap_arena, dead; /* bytes: records, allocated, tombstones */
} rt_topic_index_t;

uint32_t nsrv__tindex_hash(const char *name);

static inline size_t nsrv__tindex_rec_size(size_t name_len) {
    return (sizeof(rt_topic_t) + name_len + 1 + 3) & ~(size_t)3;
}
static inline rt_topic_t *nsrv__tindex_at(const rt_topic_index_t *ix, rt_tpos_t pos) {
    return (rt_topic_t *)(ix->arena + (size_t)pos * 4);
}
static inline rt_tpos_t nsrv__tindex_pos(const rt_topic_index_t *ix, const rt_topic_t *t) {
    return (rt_tpos_t)(((const char *)t - ix->arena) / 4);
}
/* The record position a used slot names. */
static inline rt_tpos_t nsrv__tindex_slot_pos(const rt_topic_index_t *ix, uint32_t slot) {
    return (slot & ix->pos_mask) - 1;
}
/* Whether a used slot's tag is that of a name of this hash. */
static inline bool nsrv__tindex_slot_tag_ok(const rt_topic_index_t *ix, uint32_t slot,
                                            uint32_t hash) {
    return ((slot ^ hash) & ~ix->pos_mask) == 0;
}
/* The pos_mask of an arena of cap_arena bytes (a power of two). */
uint32_t nsrv__tindex_pos_mask(size_t cap_arena);
/* The size of the record at byte offset off (live or not). */
size_t nsrv__tindex_size_at(const rt_topic_index_t *ix, size_t off);

/* Appends a record for name, which is not in the index yet (qref and cache 0). */
rt_topic_t *nsrv__tindex_add(rt_topic_index_t *ix, const char *name);
/* Removes t from the index; its record becomes a tombstone. */
void nsrv__tindex_del(rt_topic_index_t *ix, rt_topic_t *t);
/* The topic named name, or NULL. */
rt_topic_t *nsrv__tindex_get(const rt_topic_index_t *ix, const char *name);
/* Whether the tombstones are worth a compaction. */
bool nsrv__tindex_compact_due(const rt_topic_index_t *ix);
/* Slides the live records down over the tombstones (their order kept) and rebuilds the
 * index: every position changes. */
void nsrv__tindex_compact(rt_topic_index_t *ix);
/*
 * Runs the statement that follows with t (a declared topic pointer) set to each
 * topic, in creation order, removed ones skipped. The index must not change
 * while it runs.
 */
#define NSRV__TINDEX_FOREACH(ix, t)                                                                \
    for (size_t tix_o_ = 0; tix_o_ < (ix)->used; tix_o_ += nsrv__tindex_size_at((ix), tix_o_))     \
        if (((t) = (rt_topic_t *)((ix)->arena + tix_o_))->qref == RT_QREF_DEAD) {                  \
        } else
/* Frees the index and the records. */
void nsrv__tindex_free(rt_topic_index_t *ix);
