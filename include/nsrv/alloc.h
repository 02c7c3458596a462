/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The allocator facade. Production aborts on OOM, which is safe because every
 * size derived from input is capped before allocation.
 */
#pragma once

#include <stddef.h>

void *nsrv_malloc(size_t n);
void *nsrv_calloc(size_t n, size_t size);
void *nsrv_realloc(void *p, size_t n);
void nsrv_free(void *p);
char *nsrv_strdup(const char *s);
/* Copies len bytes and appends a NUL. */
char *nsrv_strndup(const char *s, size_t len);
