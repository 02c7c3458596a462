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

typedef struct nsrv_rcbuf {
    uint32_t refs;
    size_t len;
    char data[]; /* len bytes and a NUL */
} nsrv_rcbuf_t;

/* A copy of p[0..len) with one reference. */
nsrv_rcbuf_t *nsrv_rcbuf_new(const void *p, size_t len);

static inline nsrv_rcbuf_t *nsrv_rcbuf_ref(nsrv_rcbuf_t *b) {
    b->refs++;
    return b;
}

/* Drops one reference; the last frees the bytes. NULL is ignored. */
void nsrv_rcbuf_unref(nsrv_rcbuf_t *b);
