/* SPDX-License-Identifier: Apache-2.0 */
/*
 * uthash, configured once for the whole project: our allocator facade, and
 * FNV-1a instead of uthash's default Jenkins hash, whose switch falls through
 * without annotations and so fails clang's -Wimplicit-fallthrough -Werror.
 * Include this instead of <uthash.h>.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "nsrv/alloc.h"

static inline unsigned nsrv_hash_fnv1a(const void *key, size_t len) {
    const unsigned char *p = (const unsigned char *)key;
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < len; i++) {
        h ^= p[i];
        h *= 16777619u;
    }
    return h;
}

#define HASH_FUNCTION(keyptr, keylen, hashv) ((hashv) = nsrv_hash_fnv1a((keyptr), (size_t)(keylen)))
#define uthash_malloc(sz) nsrv_malloc(sz)
#define uthash_free(ptr, sz) nsrv_free(ptr)
#include <uthash.h>
