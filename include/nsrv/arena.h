/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Bump allocator for request-scoped scratch (decoded headers, JSON trees,
 * temporary strings). Everything is freed at once by reset or deinit.
 * Reset keeps the first chunk so a steady request stream allocates nothing.
 */
#pragma once

#include <stddef.h>

typedef struct nsrv_arena_chunk nsrv_arena_chunk_t;

typedef struct {
    nsrv_arena_chunk_t *head;
    size_t chunk_size;
    size_t allocated; /* bytes handed out since the last reset: lets a decoder charge a budget */
} nsrv_arena_t;

void nsrv_arena_init(nsrv_arena_t *a, size_t chunk_size);
void nsrv_arena_deinit(nsrv_arena_t *a);
void nsrv_arena_reset(nsrv_arena_t *a);
/* 8-byte aligned, never NULL (aborts on OOM). */
void *nsrv_arena_alloc(nsrv_arena_t *a, size_t n);
/* Copies len bytes and appends a NUL. */
char *nsrv_arena_strndup(nsrv_arena_t *a, const char *s, size_t len);
