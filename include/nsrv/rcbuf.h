/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Reference-counted immutable bytes: a cached reply body that the route table
 * owns and that a connection may keep referenced while the socket sends it, so
 * replies are written with scatter/gather instead of being copied. The count is
 * not atomic: one thread (the loop) takes and drops every reference.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

typedef struct nsrv_rcbuf nsrv_rcbuf_t;

/*
 * A table that keeps one reference to each of its buffers (src/route's body
 * intern table): told when every other holder has let go, so it can drop the
 * buffer at once instead of keeping bytes nobody uses.
 */
typedef struct nsrv_rcbuf_pool {
    void (*sole_holder)(struct nsrv_rcbuf_pool *pool, nsrv_rcbuf_t *b);
} nsrv_rcbuf_pool_t;

struct nsrv_rcbuf {
    uint32_t refs;
    uint32_t hash;           /* the pool's, of the bytes; 0 when not in a pool */
    nsrv_rcbuf_pool_t *pool; /* NULL unless a pool holds a reference */
    size_t len;
    char data[]; /* len bytes and a NUL */
};

/* A copy of p[0..len) with one reference. */
nsrv_rcbuf_t *nsrv_rcbuf_new(const void *p, size_t len);

static inline nsrv_rcbuf_t *nsrv_rcbuf_ref(nsrv_rcbuf_t *b) {
    b->refs++;
    return b;
}

/* Drops one reference; the last frees the bytes, and when only the pool's is
 * left the pool is told. NULL is ignored. */
void nsrv_rcbuf_unref(nsrv_rcbuf_t *b);
