/* SPDX-License-Identifier: Apache-2.0 */
/* Insertion-ordered topic array with an open-addressing index (topic_index.h). */
#include "topic_index.h"

#include <string.h>

#include "nsrv/alloc.h"
#include "route_int.h"

#define MIN_CAP 64
/* Tombstones are compacted away only past this many, so a small table that
 * alternates one create and one delete does not renumber on every delete. */
#define MIN_COMPACT 64

/*
 * Eight bytes a step (every route query hashes the topic it names: byte-wise
 * FNV-1a took ~125 instructions for a 20-byte name, this ~40), then a
 * finalizer (MurmurHash3's fmix32) that spreads every input bit over the low
 * bits that pick the slot, so names that differ only in their last digits
 * (topic-broker-0001-17, ...) do not cluster.
 */
uint32_t nsrv__tindex_hash(const char *name) {
    size_t len = strlen(name);
    const unsigned char *p = (const unsigned char *)name;
    uint64_t h = 0x9e3779b97f4a7c15u ^ len;
    for (; len >= 8; p += 8, len -= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        h = (h ^ w) * 0xff51afd7ed558ccdu;
        h ^= h >> 32;
    }
    uint64_t tail = 0;
    if (len && p != (const unsigned char *)name) {
        memcpy(&tail, p + len - 8, 8); /* the last 8 bytes, overlapping the words hashed */
    } else {
        for (size_t i = 0; i < len; i++)
            tail |= (uint64_t)p[i] << (8 * i);
    }
    h = (h ^ tail) * 0xc4ceb9fe1a85ec53u;
    uint32_t r = (uint32_t)(h ^ (h >> 32));
    r ^= r >> 16;
    r *= 0x85ebca6bu;
    r ^= r >> 13;
    r *= 0xc2b2ae35u;
    r ^= r >> 16;
    return r ? r : 1;
}

static void slot_insert(rt_topic_index_t *ix, rt_tslot_t s) {
    size_t mask = ix->cap - 1;
    size_t i = s.hash & mask;
    while (ix->slots[i].hash)
        i = (i + 1) & mask;
    ix->slots[i] = s;
}

static void resize(rt_topic_index_t *ix, size_t cap) {
    rt_tslot_t *old = ix->slots;
    size_t old_cap = ix->cap;
    ix->slots = nsrv_calloc(cap, sizeof *ix->slots);
    ix->cap = cap;
    for (size_t i = 0; i < old_cap; i++) {
        if (old[i].hash)
            slot_insert(ix, old[i]);
    }
    nsrv_free(old);
}

void nsrv__tindex_put(rt_topic_index_t *ix, struct rt_topic *t) {
    if ((ix->n + 1) * 2 > ix->cap)
        resize(ix, ix->cap ? ix->cap * 2 : MIN_CAP);
    if (ix->n_order == ix->cap_order) {
        ix->cap_order = ix->cap_order ? ix->cap_order * 2 : MIN_CAP;
        ix->order = nsrv_realloc(ix->order, ix->cap_order * sizeof ix->order[0]);
    }
    uint32_t pos = ix->n_order++;
    ix->order[pos] = t;
    slot_insert(ix, (rt_tslot_t){nsrv__tindex_hash(t->name), pos});
    ix->n++;
}

/* The slot of name, or ix->cap; t: the topic wanted, or NULL for any of that name. */
static size_t slot_find(const rt_topic_index_t *ix, const char *name, const struct rt_topic *t) {
    if (!ix->cap)
        return 0;
    uint32_t h = nsrv__tindex_hash(name);
    size_t mask = ix->cap - 1;
    for (size_t i = h & mask; ix->slots[i].hash; i = (i + 1) & mask) {
        if (ix->slots[i].hash != h)
            continue;
        const struct rt_topic *o = ix->order[ix->slots[i].pos];
        if (t ? o == t : strcmp(o->name, name) == 0)
            return i;
    }
    return ix->cap;
}

struct rt_topic *nsrv__tindex_get(const rt_topic_index_t *ix, const char *name) {
    size_t i = slot_find(ix, name, NULL);
    return i < ix->cap ? ix->order[ix->slots[i].pos] : NULL;
}

/* Drops the tombstones: positions keep their order; slots follow their topics. */
static void compact(rt_topic_index_t *ix) {
    uint32_t *to = nsrv_malloc(ix->n_order * sizeof to[0]);
    uint32_t k = 0;
    for (uint32_t i = 0; i < ix->n_order; i++) {
        to[i] = k;
        if (ix->order[i])
            ix->order[k++] = ix->order[i];
    }
    for (size_t i = 0; i < ix->cap; i++) {
        if (ix->slots[i].hash)
            ix->slots[i].pos = to[ix->slots[i].pos];
    }
    nsrv_free(to);
    ix->n_order = k;
    if (ix->cap_order > MIN_CAP && (size_t)k * 4 < ix->cap_order) {
        ix->cap_order /= 2;
        ix->order = nsrv_realloc(ix->order, ix->cap_order * sizeof ix->order[0]);
    }
}

/* Empties slot i by backward shift: every later entry of the probe run that may move
 * into the hole does, so lookups never need tombstones. */
static void slot_delete(rt_topic_index_t *ix, size_t i) {
    size_t mask = ix->cap - 1;
    for (size_t j = (i + 1) & mask; ix->slots[j].hash; j = (j + 1) & mask) {
        size_t home = ix->slots[j].hash & mask;
        /* j's entry may fill hole i unless its home lies cyclically in (i, j]. */
        bool stays = i <= j ? (home > i && home <= j) : (home > i || home <= j);
        if (!stays) {
            ix->slots[i] = ix->slots[j];
            i = j;
        }
    }
    ix->slots[i] = (rt_tslot_t){0, 0};
}

void nsrv__tindex_del(rt_topic_index_t *ix, const struct rt_topic *t) {
    size_t i = slot_find(ix, t->name, t);
    if (i >= ix->cap)
        return;
    ix->order[ix->slots[i].pos] = NULL;
    slot_delete(ix, i);
    ix->n--;
    while (ix->n_order && !ix->order[ix->n_order - 1])
        ix->n_order--; /* the newest went first: nothing to compact */
    size_t dead = ix->n_order - ix->n;
    if (dead > MIN_COMPACT && dead * 2 > ix->n_order)
        compact(ix);
    if (ix->cap > MIN_CAP && ix->n * 8 < ix->cap)
        resize(ix, ix->cap / 2);
}

void nsrv__tindex_free(rt_topic_index_t *ix) {
    nsrv_free(ix->slots);
    nsrv_free(ix->order);
    *ix = (rt_topic_index_t){0};
}
