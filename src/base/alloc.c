/* SPDX-License-Identifier: Apache-2.0 */
/* The allocator facade: one place to abort on OOM. */
#include "nsrv/alloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void *oom(size_t n) {
    fprintf(stderr, "nsrvd: out of memory allocating %zu bytes\n", n);
    abort();
}

void *nsrv_malloc(size_t n) {
    void *p = malloc(n ? n : 1);
    return p ? p : oom(n);
}

void *nsrv_calloc(size_t n, size_t size) {
    void *p = calloc(n ? n : 1, size ? size : 1);
    return p ? p : oom(n * size);
}

void *nsrv_realloc(void *p, size_t n) {
    void *q = realloc(p, n ? n : 1);
    return q ? q : oom(n);
}

void nsrv_free(void *p) {
    free(p);
}

char *nsrv_strdup(const char *s) {
    return nsrv_strndup(s, strlen(s));
}

char *nsrv_strndup(const char *s, size_t len) {
    char *d = nsrv_malloc(len + 1);
    if (len)
        memcpy(d, s, len);
    d[len] = '\0';
    return d;
}
