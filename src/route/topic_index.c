/* SPDX-License-Identifier: Apache-2.0 */
/* Open-addressing topic index with linear probing (topic_index.h). */
#include "topic_index.h"

#include <string.h>

#include "nsrv/alloc.h"
#include "route_int.h"

#define MIN_CAP 64

/*
 * FNV-1a followed by a finalizer. FNV-1a alone leaves the low bits, which
 * pick the slot, poorly mixed for names that differ only in their last
 * digits (topic-broker-0001-17, ...); the finalizer (MurmurHash3's fmix32)
 * spreads every input bit over them.
 */
uint32_t nsrv__tindex_hash(const char *name) {
    uint32_t h = 2166136261u;
    for (const unsigned char *p = (const unsigned char *)name; *p; p++) {
        h ^= *p;
        h *= 16777619u;
    }
    h ^= h >> 16;
    h *= 0x85ebca6bu;
    h ^= h >> 13;
    h *= 0xc2b2ae35u;
    h ^= h >> 16;
    return h ? h : 1;
}

static void insert(rt_topic_index_t *ix, uint32_t h, struct rt_topic *t) {
    size_t mask = ix->cap - 1;
    size_t i = h & mask;
    while (ix->slots[i].hash)
        i = (i + 1) & mask;
    ix->slots[i] = (rt_tslot_t){h, t};
    ix->n++;
}

static void resize(rt_topic_index_t *ix, size_t cap) {
    rt_tslot_t *old = ix->slots;
    size_t old_cap = ix->cap;
    ix->slots = nsrv_calloc(cap, sizeof *ix->slots);
    ix->cap = cap;
    ix->n = 0;
    for (size_t i = 0; i < old_cap; i++) {
        if (old[i].hash)
            insert(ix, old[i].hash, old[i].topic);
    }
    nsrv_free(old);
}

void nsrv__tindex_put(rt_topic_index_t *ix, struct rt_topic *t, const char *name) {
    if ((ix->n + 1) * 2 > ix->cap)
        resize(ix, ix->cap ? ix->cap * 2 : MIN_CAP);
    insert(ix, nsrv__tindex_hash(name), t);
}

struct rt_topic *nsrv__tindex_get(const rt_topic_index_t *ix, const char *name) {
    if (!ix->cap)
        return NULL;
    uint32_t h = nsrv__tindex_hash(name);
    size_t mask = ix->cap - 1;
    for (size_t i = h & mask; ix->slots[i].hash; i = (i + 1) & mask) {
        if (ix->slots[i].hash == h && strcmp(ix->slots[i].topic->name, name) == 0)
            return ix->slots[i].topic;
    }
    return NULL;
}

/* Removes by backward shift: every later entry of the probe run that may move
 * into the hole does, so lookups never need tombstones. */
void nsrv__tindex_del(rt_topic_index_t *ix, const struct rt_topic *t, const char *name) {
    if (!ix->cap)
        return;
    size_t mask = ix->cap - 1;
    size_t i = nsrv__tindex_hash(name) & mask;
    while (ix->slots[i].hash && ix->slots[i].topic != t)
        i = (i + 1) & mask;
    if (!ix->slots[i].hash)
        return;
    for (size_t j = (i + 1) & mask; ix->slots[j].hash; j = (j + 1) & mask) {
        size_t home = ix->slots[j].hash & mask;
        /* j's entry may fill hole i unless its home lies cyclically in (i, j]. */
        bool stays = i <= j ? (home > i && home <= j) : (home > i || home <= j);
        if (!stays) {
            ix->slots[i] = ix->slots[j];
            i = j;
        }
    }
    ix->slots[i] = (rt_tslot_t){0, NULL};
    ix->n--;
    if (ix->cap > MIN_CAP && ix->n * 8 < ix->cap)
        resize(ix, ix->cap / 2);
}

void nsrv__tindex_free(rt_topic_index_t *ix) {
    nsrv_free(ix->slots);
    *ix = (rt_topic_index_t){0};
}
