/* SPDX-License-Identifier: Apache-2.0 */
/* Cached route bodies shared by content (route_body_intern.h). */
#include "route_body_intern.h"

#include <stdio.h>
#include <string.h>

#include "nsrv/alloc.h"
#include "nsrv/common.h"
#include "nsrv/hash.h"

#include "route_check.h"

enum { MIN_CAP = 16 };

/* Bodies are built only on a cache miss, and equal hashes are confirmed on the
 * bytes; never 0, which marks a buffer outside any pool. */
static uint32_t body_hash(const void *p, size_t len) {
    return nsrv_hash_bytes(p, len);
}

/* The first buffer on h's probe path with these bytes; NULL when none. */
static nsrv_rcbuf_t *find(const rt_body_intern_t *bi, uint32_t h, const void *p, size_t len) {
    if (!bi->cap)
        return NULL;
    size_t mask = bi->cap - 1;
    for (size_t i = h & mask;; i = (i + 1) & mask) {
        nsrv_rcbuf_t *b = bi->slots[i];
        if (!b)
            return NULL;
        if (b->hash == h && b->len == len && memcmp(b->data, p, len) == 0)
            return b;
    }
}

static void place(nsrv_rcbuf_t **slots, size_t cap, nsrv_rcbuf_t *b) {
    size_t i = b->hash & (cap - 1);
    while (slots[i])
        i = (i + 1) & (cap - 1);
    slots[i] = b;
}

static void resize(rt_body_intern_t *bi, size_t cap) {
    nsrv_rcbuf_t **slots = cap ? nsrv_calloc(cap, sizeof *slots) : NULL;
    for (size_t i = 0; i < bi->cap; i++) {
        if (bi->slots[i])
            place(slots, cap, bi->slots[i]);
    }
    nsrv_free(bi->slots);
    bi->slots = slots;
    bi->cap = cap;
}

/* Removes b's slot, shifting back the entries behind it on their probe paths
 * so no lookup meets a hole before its entry (no tombstones). */
static void remove_slot(rt_body_intern_t *bi, const nsrv_rcbuf_t *b) {
    size_t mask = bi->cap - 1, i = b->hash & mask, steps = 0;
    while (bi->slots[i] != b) {
        NSRV_REQUIRE(++steps < bi->cap);
        i = (i + 1) & mask;
    }
    for (size_t j = (i + 1) & mask; bi->slots[j]; j = (j + 1) & mask) {
        size_t home = bi->slots[j]->hash & mask;
        bool home_in_hole_to_j = i <= j ? (home > i && home <= j) : (home > i || home <= j);
        if (!home_in_hole_to_j) {
            bi->slots[i] = bi->slots[j];
            i = j;
        }
    }
    bi->slots[i] = NULL;
    bi->n--;
}

/* The rcbuf hook: only the table's reference is left, so nobody uses the bytes. */
static void sole_holder(nsrv_rcbuf_pool_t *pool, nsrv_rcbuf_t *b) {
    rt_body_intern_t *bi = (rt_body_intern_t *)pool;
    remove_slot(bi, b);
    b->pool = NULL;
    b->hash = 0;
    nsrv_rcbuf_unref(b);
    if (bi->n == 0)
        resize(bi, 0);
    else if (bi->cap > MIN_CAP && bi->n * 16 < bi->cap)
        resize(bi, bi->cap / 4 > MIN_CAP ? bi->cap / 4 : MIN_CAP);
}

void nsrv__body_intern_init(rt_body_intern_t *bi) {
    memset(bi, 0, sizeof *bi);
    bi->pool.sole_holder = sole_holder;
}

void nsrv__body_intern_deinit(rt_body_intern_t *bi) {
    for (size_t i = 0; i < bi->cap; i++) {
        nsrv_rcbuf_t *b = bi->slots[i];
        if (!b)
            continue;
        b->pool = NULL; /* a connection may still hold it: a plain buffer from now on */
        b->hash = 0;
        nsrv_rcbuf_unref(b);
    }
    nsrv_free(bi->slots);
    nsrv__body_intern_init(bi);
}

nsrv_rcbuf_t *nsrv__body_intern(rt_body_intern_t *bi, const void *p, size_t len) {
    uint32_t h = body_hash(p, len);
    nsrv_rcbuf_t *b = find(bi, h, p, len);
    if (b) {
        bi->shares++;
        return nsrv_rcbuf_ref(b);
    }
    if ((bi->n + 1) * 2 > bi->cap)
        resize(bi, bi->cap ? bi->cap * 2 : MIN_CAP);
    b = nsrv_rcbuf_new(p, len);
    b->hash = h;
    b->pool = &bi->pool;
    place(bi->slots, bi->cap, b);
    bi->n++;
    return nsrv_rcbuf_ref(b);
}

bool nsrv__body_intern_holds(const rt_body_intern_t *bi, const nsrv_rcbuf_t *b) {
    return b->pool == &bi->pool && find(bi, b->hash, b->data, b->len) == b;
}

size_t nsrv__body_intern_outside_refs(const rt_body_intern_t *bi) {
    size_t refs = 0;
    for (size_t i = 0; i < bi->cap; i++) {
        if (bi->slots[i])
            refs += bi->slots[i]->refs - 1;
    }
    return refs;
}

int nsrv__body_intern_check(const rt_body_intern_t *bi, char *why, size_t why_len) {
    if (bi->cap & (bi->cap - 1))
        FAIL("body table capacity %zu is not a power of two", bi->cap);
    if (bi->n * 2 > bi->cap || (bi->cap > MIN_CAP && bi->n * 16 < bi->cap))
        FAIL("body table holds %zu bodies in %zu slots", bi->n, bi->cap);
    size_t used = 0;
    for (size_t i = 0; i < bi->cap; i++) {
        const nsrv_rcbuf_t *b = bi->slots[i];
        if (!b)
            continue;
        used++;
        if (b->pool != &bi->pool || b->hash != body_hash(b->data, b->len))
            FAIL("body in slot %zu has a wrong pool or hash", i);
        if (b->refs < 2)
            FAIL("body in slot %zu is held by the table only", i);
        /* Also proves no two entries have the same bytes: the first one found is this one. */
        if (find(bi, b->hash, b->data, b->len) != b)
            FAIL("body in slot %zu is not what a lookup of its bytes finds", i);
    }
    if (used != bi->n)
        FAIL("body table counts %zu bodies, its slots hold %zu", bi->n, used);
    return 0;
}
