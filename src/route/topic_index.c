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

uint32_t nsrv__tindex_pos_mask(size_t cap_arena) {
    /* 1 + position runs up to cap_arena / 4, a power of two: twice that, less one. */
    uint64_t mask = (uint64_t)cap_arena / 2 - 1;
    return mask > UINT32_MAX ? UINT32_MAX : (uint32_t)mask;
}

static uint32_t slot_make(const rt_topic_index_t *ix, rt_tpos_t pos, uint32_t hash) {
    return (hash & ~ix->pos_mask) | (pos + 1);
}

static const char *slot_name(const rt_topic_index_t *ix, uint32_t slot) {
    return nsrv__tindex_at(ix, nsrv__tindex_slot_pos(ix, slot))->name;
}

static void slot_insert(rt_topic_index_t *ix, uint32_t slot, uint32_t hash) {
    size_t mask = ix->cap - 1;
    size_t i = hash & mask;
    while (ix->slots[i])
        i = (i + 1) & mask;
    ix->slots[i] = slot;
}

/* The tag bits hold only part of the hash: a moved entry's home is recomputed from its name. */
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

/* The arena grew to cap_arena: positions may take more bits, which the tags give up (a
 * tag is the hash's bits in place, so narrowing it is clearing its lowest bits). */
static void widen_positions(rt_topic_index_t *ix, size_t cap_arena) {
    uint32_t old_mask = ix->pos_mask, mask = nsrv__tindex_pos_mask(cap_arena);
    ix->pos_mask = mask;
    if (mask == old_mask)
        return;
    for (size_t i = 0; i < ix->cap; i++) {
        if (ix->slots[i])
            ix->slots[i] = (ix->slots[i] & ~mask) | (ix->slots[i] & old_mask);
    }
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
        widen_positions(ix, cap);
    }
    rt_topic_t *t = (rt_topic_t *)(ix->arena + ix->used);
    memset(t, 0, size);
    memcpy(t->name, name, len + 1);
    rt_tpos_t pos = (rt_tpos_t)(ix->used / 4);
    ix->used += size;
    if ((ix->n + 1) * 2 > ix->cap)
        resize(ix, ix->cap ? ix->cap * 2 : MIN_CAP);
    uint32_t hash = nsrv_hash_bytes(name, len);
    slot_insert(ix, slot_make(ix, pos, hash), hash);
    ix->n++;
    return t;
}

/* The index of the slot of name (len bytes, this hash), or ix->cap. Tags first: a record
 * is read only where its tag matches (topic_index.h). */
static inline size_t slot_find(const rt_topic_index_t *ix, const char *name, size_t len,
                               uint32_t hash) {
    if (!ix->cap)
        return 0;
    const uint32_t *slots = ix->slots, pos_mask = ix->pos_mask, tag = hash & ~pos_mask;
    size_t mask = ix->cap - 1;
    for (size_t i = hash & mask;; i = (i + 1) & mask) {
        uint32_t slot = slots[i];
        if (!slot)
            return ix->cap;
        if ((slot & ~pos_mask) != tag)
            continue;
        /* Compares the NULs too, so a longer record name differs; a shorter one differs at
         * its NUL, and the bytes read past it are later records, inside the arena's used
         * part (checked: the arena's last record may be shorter than name). */
        size_t off = (size_t)((slot & pos_mask) - 1) * 4 + sizeof(rt_topic_t);
        if (off + len < ix->used && memcmp(ix->arena + off, name, len + 1) == 0)
            return i;
    }
}

rt_topic_t *nsrv__tindex_get(const rt_topic_index_t *ix, const char *name) {
    size_t len = strlen(name);
    size_t i = slot_find(ix, name, len, nsrv_hash_bytes(name, len));
    return i < ix->cap ? nsrv__tindex_at(ix, nsrv__tindex_slot_pos(ix, ix->slots[i])) : NULL;
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
    size_t len = strlen(t->name);
    size_t i = slot_find(ix, t->name, len, nsrv_hash_bytes(t->name, len));
    if (i >= ix->cap || nsrv__tindex_slot_pos(ix, ix->slots[i]) != nsrv__tindex_pos(ix, t))
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
    ix->pos_mask = nsrv__tindex_pos_mask(ix->cap_arena);
    memset(ix->slots, 0, ix->cap * sizeof ix->slots[0]);
    for (size_t off = 0; off < ix->used; off += nsrv__tindex_size_at(ix, off)) {
        const rt_topic_t *t = (const rt_topic_t *)(ix->arena + off);
        uint32_t hash = nsrv__tindex_hash(t->name);
        slot_insert(ix, slot_make(ix, (rt_tpos_t)(off / 4), hash), hash);
    }
}

void nsrv__tindex_free(rt_topic_index_t *ix) {
    nsrv_free(ix->slots);
    nsrv_free(ix->arena);
    *ix = (rt_topic_index_t){0};
}
