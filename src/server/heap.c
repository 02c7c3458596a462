/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The process heap's policy (glibc), so that memory freed after a burst leaves
 * the footprint instead of staying reserved by the allocator.
 *
 * glibc raises its mmap threshold to the size of any mmapped block that is
 * freed (up to 32 MiB) and its trim threshold to twice that. The route table
 * frees big arrays when it grows (the topic index and order arrays, tens of
 * megabytes with a million topics) and big frames come and go, so after a
 * fleet's first registrations every further block of up to 32 MiB came from
 * the heaps, and each heap kept up to 64 MiB of free top: the pool threads
 * that decode big registrations (conn_offload.c) have arenas of their own,
 * and malloc_trim does not shrink those tops. Fixed thresholds turn the
 * dynamic adjustment off: big blocks are mmapped and unmapped when freed, and
 * every heap gives its free top back past TRIM_THRESHOLD.
 *
 * Arenas are capped at two: the pool threads would otherwise each keep an
 * arena of their own (four with libuv's default pool), each holding its
 * fragments and up to TRIM_THRESHOLD of free top after a burst of big
 * registrations (MEM-1000x100: 0.7 MB of a 9.7 MB process). Most small
 * allocations are served by the per-thread caches without taking an arena's
 * lock, so sharing costs little.
 *
 * GLIBC_TUNABLES set by the operator wins: the policy is then left alone.
 */
#include <stdlib.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

#include "server_int.h"

#define MMAP_THRESHOLD (256 * 1024)
#define TRIM_THRESHOLD (1024 * 1024)
#define ARENA_MAX 2

void nsrv__heap_policy_apply(void) {
#ifdef __GLIBC__
    if (getenv("GLIBC_TUNABLES"))
        return;
    mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD);
    mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD);
    mallopt(M_ARENA_MAX, ARENA_MAX);
#endif
}

void nsrv__heap_give_back(void) {
#ifdef __GLIBC__
    malloc_trim(0);
#endif
}
