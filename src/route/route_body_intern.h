/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Cached route bodies shared by content (benchmark profile P2): a route body names no
 * topic, and topics created cluster-wide with the same queue numbers have
 * byte-identical routes, so every topic whose body has the same bytes holds a
 * reference to ONE buffer. Fewer distinct bodies keep the bytes the socket
 * copies hot in the CPU cache, and the memory of the cache is that of the
 * distinct routes, not of the topics queried.
 *
 * The table maps the bytes to their buffer (open addressing over the bytes'
 * hash, equality checked on the bytes) and keeps one reference to each. A
 * buffer leaves the table as soon as its last other holder (a topic's cache or
 * a connection still sending it) drops its reference, through the rcbuf pool
 * hook (include/nsrv/rcbuf.h): the table never holds bytes nobody uses, and its
 * slot array stays between 2x and 16x its entries. Loop thread only.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "nsrv/rcbuf.h"

typedef struct {
    nsrv_rcbuf_pool_t pool; /* first member: the hook's handle is the table */
    nsrv_rcbuf_t **slots;   /* linear probing; NULL is free; at most half full */
    size_t cap, n;          /* cap is 0 or a power of two */
    uint64_t shares;        /* bodies built that already had a buffer */
} rt_body_intern_t;

void nsrv__body_intern_init(rt_body_intern_t *bi);
/* Lets go of every buffer; holders elsewhere keep theirs as plain buffers. */
void nsrv__body_intern_deinit(rt_body_intern_t *bi);

/* The buffer holding p[0..len) with one more reference for the caller: the
 * table's when it has those bytes, else a new one that it keeps too. */
nsrv_rcbuf_t *nsrv__body_intern(rt_body_intern_t *bi, const void *p, size_t len);

/* True when b is this table's buffer for its bytes. */
bool nsrv__body_intern_holds(const rt_body_intern_t *bi, const nsrv_rcbuf_t *b);

/* The references held outside the table, summed over its buffers. */
size_t nsrv__body_intern_outside_refs(const rt_body_intern_t *bi);

/* For nsrv__route_check: the table's invariants; 0 or a negative line number. */
int nsrv__body_intern_check(const rt_body_intern_t *bi, char *why, size_t why_len);
