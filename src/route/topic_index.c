/* SPDX-License-Identifier: Apache-2.0 */
/* Creation-ordered topic records with an open-addressing index (topic_index.h). */
#include "topic_index.h"

#include <string.h>

#include "nsrv/alloc.h"
#include "nsrv/common.h"
#include "nsrv/hash.h"

#define MIN_CAP 64
#define MIN_ARENA 4096
/* Tombstones are compacted away only past this many bytes, so a small table that
 * alternates one create and one delete does not move its records on every delete. */
#define MIN_COMPACT 4096

uint32_t nsrv__tindex_hash(const char *name) {
    return nsrv_hash_bytes(name, strlen(name));
}

size_t nsrv__tindex_size_at(const rt_topic_index_t *ix, size_t off) {
    const rt_topic_t *t = (const rt_topic_t *)(ix->arena + off);
    return nsrv__tindex_rec_size(strlen(t->name));
}

static const char *slot_name(const rt_topic_index_t *ix, uint32_t slot) {
    return nsrv__tindex_at(ix, slot - 1)->name;
}

/* Positions only: the hash of an entry being moved is recomputed from its name. */
static void slot_insert(rt_topic_index_t *ix, uint32_t slot, uint32_t hash) {
    size_t mask = ix->cap - 1;
    size_t i = hash & mask;
    while (ix->slots[i])
        i = (i + 1) & mask;
    ix->slots[i] = slot;
}

static void resize(rt_topic_index_t *ix, size_t cap) {
    uint32_t *old = ix->slots;
    size_t old_cap = ix->cap;
    ix->slots = nsrv_calloc(cap, sizeof *ix->slots);
    ix->cap = cap;
    for (size_t i = 0; i < old_cap; i++) {
        if (old[i])
            slot_insert(ix, old[i], nsrv__tindex_hash(slot_name(ix, old[i])));
    }
    nsrv_free(old);
}

rt_topic_t *nsrv__tindex_add(rt_topic_index_t *ix, const char *name) {
    size_t len = strlen(name), size = nsrv__tindex_rec_size(len);
    if (ix->used + size > ix->cap_arena) {
        size_t cap = ix->cap_arena ? ix->cap_arena : MIN_ARENA;
        while (ix->used + size > cap)
            cap *= 2;
        /* Positions are 32-bit counts of 4 bytes. */
        NSRV_REQUIRE(cap / 4 < UINT32_MAX);
        /* Big arenas are mmapped by the allocator: the unused tail costs no memory. */
        ix->arena = nsrv_realloc(ix->arena, cap);
        ix->cap_arena = cap;
    }
    rt_topic_t *t = (rt_topic_t *)(ix->arena + ix->used);
    memset(t, 0, size);
    memcpy(t->name, name, len + 1);
    rt_tpos_t pos = (rt_tpos_t)(ix->used / 4);
    ix->used += size;
    if ((ix->n + 1) * 2 > ix->cap)
        resize(ix, ix->cap ? ix->cap * 2 : MIN_CAP);
    slot_insert(ix, pos + 1, nsrv__tindex_hash(name));
    ix->n++;
    return t;
}

/* The slot of name, or ix->cap. */
static size_t slot_find(const rt_topic_index_t *ix, const char *name) {
    if (!ix->cap)
        return 0;
    size_t mask = ix->cap - 1;
    for (size_t i = nsrv__tindex_hash(name) & mask; ix->slots[i]; i = (i + 1) & mask) {
        if (strcmp(slot_name(ix, ix->slots[i]), name) == 0)
            return i;
    }
    return ix->cap;
}

rt_topic_t *nsrv__tindex_get(const rt_topic_index_t *ix, const char *name) {
    size_t i = slot_find(ix, name);
    return i < ix->cap ? nsrv__tindex_at(ix, ix->slots[i] - 1) : NULL;
}

/* Empties slot i by backward shift: every later entry of the probe run that may move
 * into the hole does, so lookups never need tombstones. */
static void slot_delete(rt_topic_index_t *ix, size_t i) {
    size_t mask = ix->cap - 1;
    for (size_t j = (i + 1) & mask; ix->slots[j]; j = (j + 1) & mask) {
        size_t home = nsrv__tindex_hash(slot_name(ix, ix->slots[j])) & mask;
        /* j's entry may fill hole i unless its home lies cyclically in (i, j]. */
        bool stays = i <= j ? (home > i && home <= j) : (home > i || home <= j);
        if (!stays) {
            ix->slots[i] = ix->slots[j];
            i = j;
        }
    }
    ix->slots[i] = 0;
}

void nsrv__tindex_del(rt_topic_index_t *ix, rt_topic_t *t) {
    size_t i = slot_find(ix, t->name);
    if (i >= ix->cap || ix->slots[i] - 1 != nsrv__tindex_pos(ix, t))
        return;
    slot_delete(ix, i);
    ix->n--;
    size_t size = nsrv__tindex_rec_size(strlen(t->name));
    t->qref = RT_QREF_DEAD;
    if ((char *)t + size == ix->arena + ix->used)
        ix->used -= size; /* the newest went first: no tombstone */
    else
        ix->dead += size;
    if (ix->n == 0) {
        ix->used = ix->dead = 0; /* every record left is a tombstone */
    }
    if (ix->cap > MIN_CAP && ix->n * 8 < ix->cap)
        resize(ix, ix->cap / 2);
}

bool nsrv__tindex_compact_due(const rt_topic_index_t *ix) {
    return ix->dead > MIN_COMPACT && ix->dead * 2 > ix->used;
}

void nsrv__tindex_compact(rt_topic_index_t *ix) {
    size_t to = 0;
    for (size_t from = 0; from < ix->used;) {
        size_t size = nsrv__tindex_size_at(ix, from);
        if (((rt_topic_t *)(ix->arena + from))->qref != RT_QREF_DEAD) {
            if (to != from)
                memmove(ix->arena + to, ix->arena + from, size);
            to += size;
        }
        from += size;
    }
    ix->used = to;
    ix->dead = 0;
    if (ix->cap_arena > MIN_ARENA && ix->used * 4 < ix->cap_arena) {
        ix->cap_arena /= 2;
        ix->arena = nsrv_realloc(ix->arena, ix->cap_arena);
    }
    memset(ix->slots, 0, ix->cap * sizeof ix->slots[0]);
    for (size_t off = 0; off < ix->used; off += nsrv__tindex_size_at(ix, off)) {
        const rt_topic_t *t = (const rt_topic_t *)(ix->arena + off);
        slot_insert(ix, (uint32_t)(off / 4) + 1, nsrv__tindex_hash(t->name));
    }
}

void nsrv__tindex_free(rt_topic_index_t *ix) {
    nsrv_free(ix->slots);
    nsrv_free(ix->arena);
    *ix = (rt_topic_index_t){0};
}
