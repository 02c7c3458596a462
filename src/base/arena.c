/* SPDX-License-Identifier: Apache-2.0 */
/* Bump allocator for request-scoped scratch. */
#include "nsrv/arena.h"

#include <stdint.h>
#include <string.h>

#include "nsrv/alloc.h"

struct nsrv_arena_chunk {
    nsrv_arena_chunk_t *next;
    size_t size;
    size_t used;
    _Alignas(16) unsigned char data[];
};

void nsrv_arena_init(nsrv_arena_t *a, size_t chunk_size) {
    a->head = NULL;
    a->chunk_size = chunk_size ? chunk_size : 8192;
    a->allocated = 0;
}

void nsrv_arena_deinit(nsrv_arena_t *a) {
    nsrv_arena_chunk_t *c = a->head;
    while (c) {
        nsrv_arena_chunk_t *n = c->next;
        nsrv_free(c);
        c = n;
    }
    a->head = NULL;
}

void nsrv_arena_reset(nsrv_arena_t *a) {
    if (!a->head)
        return;
    /* Keep only the oldest chunk (the last in the list): it is the regular size. */
    nsrv_arena_chunk_t *c = a->head;
    while (c->next) {
        nsrv_arena_chunk_t *n = c->next;
        nsrv_free(c);
        c = n;
    }
    c->used = 0;
    a->head = c;
    a->allocated = 0;
}

void *nsrv_arena_alloc(nsrv_arena_t *a, size_t n) {
    n = (n + 7) & ~(size_t)7;
    nsrv_arena_chunk_t *c = a->head;
    if (!c || c->size - c->used < n) {
        size_t size = n > a->chunk_size ? n : a->chunk_size;
        nsrv_arena_chunk_t *nc = nsrv_malloc(sizeof *nc + size);
        nc->size = size;
        nc->used = 0;
        nc->next = a->head;
        a->head = nc;
        c = nc;
    }
    void *p = c->data + c->used;
    c->used += n;
    a->allocated += n;
    return p;
}

char *nsrv_arena_strndup(nsrv_arena_t *a, const char *s, size_t len) {
    char *d = nsrv_arena_alloc(a, len + 1);
    if (len)
        memcpy(d, s, len);
    d[len] = '\0';
    return d;
}
